//! The engine's and the model's modules stand in layers: no two modules import each other,
//! directly or around a loop (each was untangled once; a new cycle fails here, naming it).

use std::path::Path;

use wirespeed_testkit::modules::cycles;

#[test]
fn the_engine_and_the_model_have_no_module_cycles() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["engine", "model"] {
        let found = cycles(&crates.join(name).join("src"));
        assert!(found.is_empty(), "{name}: modules that import each other: {found:?}");
    }
}
