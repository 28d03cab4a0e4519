//! Fuzz target: any bytes through the handoff parser and every validation layer must not
//! panic. Run with `cargo fuzz run parse_handoff` from the repository root.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut files = baton::MemoryFiles::new();
    files.insert("src/a.rs", "fn a() {}\nfn b() {}\n");
    let log = baton::ObservationLog::default();
    let check = baton::Check {
        files: Some(&files),
        observations: Some(&log),
        docs: None,
    };
    let parsed = baton::validate(&text, &check);
    // Whatever parsed renders and parses again without panicking.
    let _ = baton::parse_handoff(&parsed.handoff.to_markdown());
    let _ = baton::parse_handoff(&parsed.handoff.to_json());
});
