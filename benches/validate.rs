//! Validating a 2,000-token handoff with 30 conclusions (structure + resolution + quotation
//! against an in-memory file cache). Target: median under 50 µs.
//!
//!     cargo bench --bench validate

use baton::testing::MemoryFiles;
use baton::tokens::estimate_tokens;
use baton::{validate, Check};
use criterion::{criterion_group, criterion_main, Criterion};

/// Three source files of 300 lines each, and a handoff whose 30 conclusions each cite 6 lines
/// of them and quote a piece of one.
fn fixture() -> (MemoryFiles, String) {
    let mut files = MemoryFiles::new();
    let mut sources = Vec::new();
    for f in 0..3 {
        let text: String = (1..=300)
            .map(|i| format!("    let value_{f}_{i} = compute_{i}(input, {i}) + offset_{f};\n"))
            .collect();
        let path = format!("src/module_{f}/part.rs");
        files.insert(&path, &text);
        sources.push(path);
    }
    let mut handoff = String::from("## Settled conclusions\n");
    for c in 0..30 {
        let f = c % 3;
        let start = 10 + c * 9;
        let line = start + 2;
        handoff.push_str(&format!(
            "- In {}, the value for step {c} is computed by `compute_{line}(input, {line})` and then shifted by the module offset, which keeps each step of the pipeline independent of the others and lets the caller combine them freely. [{}:{}-{}]\n",
            sources[f],
            sources[f],
            start,
            start + 5
        ));
    }
    handoff.push_str("## Open items\n- Whether callers reuse the values — stuck: callers were not searched\n## Hard constraints\n- none\n");
    (files, handoff)
}

fn bench(c: &mut Criterion) {
    let (files, handoff) = fixture();
    let check = Check {
        files: Some(&files),
        observations: None,
        docs: None,
    };
    let parsed = validate(&handoff, &check);
    assert!(parsed.violations.is_empty(), "{:?}", parsed.violations);
    assert_eq!(parsed.handoff.settled_conclusions.len(), 30);
    let tokens = estimate_tokens(&handoff);
    assert!((1800..=2600).contains(&tokens), "{tokens} tokens");
    c.bench_function("validate 30 conclusions (~2k tokens)", |b| {
        b.iter(|| validate(std::hint::black_box(&handoff), &check))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
