//! The end-to-end tests of the `wirespeed` binary, built as one test binary (one link, where
//! one binary per file linked the same dependencies once per file). The modules run the real
//! binary (`CARGO_BIN_EXE_wirespeed`) against real servers and peers; [`common`] holds what they
//! share beyond the workspace's `wirespeed-testkit`.

mod common;

mod bench_cli;
mod bench_examples;
mod bench_hosts;
mod bench_ready;
mod bench_run;
mod bench_ssh;
mod browser;
mod cli;
mod crash;
mod faults;
mod k8s;
mod live;
mod members;
mod netfaults;
mod netpath;
mod package;
mod prometheus;
mod rpm;
mod saved;
mod studies;
mod trace;
mod vegeta;
mod web;
mod web_browser;
mod web_clients;
mod web_geoip;
