//! The published JSON Schema of a report (`docs/report.schema.json`) is the one the types
//! generate: a change to a report type that forgets the document fails here. To write the
//! document anew after such a change: `WIRESPEED_BLESS=1 cargo test -p wirespeed-model --test
//! schema`.

use std::path::Path;

use wirespeed_model::Report;

#[test]
fn the_published_report_schema_is_the_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/report.schema.json");
    let generated = serde_json::to_string_pretty(&Report::schema()).unwrap() + "\n";
    if std::env::var_os("WIRESPEED_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == generated,
        "docs/report.schema.json is not what the report types generate; rewrite it with \
         WIRESPEED_BLESS=1 cargo test -p wirespeed-model --test schema"
    );
}
