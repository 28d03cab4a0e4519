//! Measures the research index: generates N documents (Markdown, 100 a directory, about 5 KB
//! each: a title, six sections of two 60-word paragraphs drawn from a 20,000-word vocabulary)
//! — the same corpus for the same arguments every time —, indexes them from nothing, then
//! again unchanged, and runs 200 searches; prints documents/s, the index's size on disk
//! against the text's, the unchanged re-index time and the median search latency as JSON.
//!
//!     cargo run --release --example bench_corpus -- DIR [N]
//!     /usr/bin/time -f "%e s, %M KB" target/release/examples/bench_corpus DIR 10000
//!
//! (`/usr/bin/time` gives the peak RSS.) DIR is emptied first.

use std::path::Path;
use std::time::Instant;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn vocabulary(rng: &mut Rng) -> Vec<String> {
    (0..20_000)
        .map(|_| {
            let len = 3 + rng.below(7);
            (0..len)
                .map(|_| (b'a' + rng.below(26) as u8) as char)
                .collect()
        })
        .collect()
}

/// Writes the corpus; returns its bytes.
fn generate(dir: &Path, n: usize) -> std::io::Result<u64> {
    let mut rng = Rng(7);
    let words = vocabulary(&mut rng);
    let mut bytes = 0;
    for i in 0..n {
        let sub = dir.join(format!("d{:03}", i / 100));
        std::fs::create_dir_all(&sub)?;
        let mut text = format!("# Document {i}\n\n");
        for s in 0..6 {
            text.push_str(&format!("## Section {s}\n\n"));
            for _ in 0..2 {
                let para: Vec<&str> = (0..60)
                    .map(|_| words[rng.below(words.len())].as_str())
                    .collect();
                text.push_str(&para.join(" "));
                text.push_str(".\n\n");
            }
        }
        bytes += text.len() as u64;
        std::fs::write(sub.join(format!("doc{i:05}.md")), text)?;
    }
    Ok(bytes)
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = Path::new(args.first().ok_or("usage: bench_corpus DIR [N]")?);
    let n: usize = args.get(1).map_or(Ok(10_000), |a| a.parse())?;
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let docs = dir.join("docs");
    let state = dir.join("state");
    let text_bytes = generate(&docs, n)?;
    let index_dir = baton::Corpus::index_dir_in(&state, &docs);
    let started = Instant::now();
    let (corpus, stats) = baton::Corpus::open(&docs, Some(&index_dir), &|_, _| {})?;
    let build = started.elapsed().as_secs_f64();
    drop(corpus);
    let started = Instant::now();
    let (corpus, again) = baton::Corpus::open(&docs, Some(&index_dir), &|_, _| {})?;
    let unchanged = started.elapsed().as_secs_f64();
    // Queries of 1 to 4 words of the vocabulary, the same every time.
    let mut rng = Rng(11);
    let words = vocabulary(&mut Rng(7));
    let mut latencies = Vec::new();
    for _ in 0..200 {
        let query: Vec<&str> = (0..1 + rng.below(4))
            .map(|_| words[rng.below(words.len())].as_str())
            .collect();
        let t = Instant::now();
        corpus.search_text(&query.join(" "), 8)?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    latencies.sort_by(f64::total_cmp);
    let index_bytes = dir_size(&index_dir);
    println!(
        "{}",
        serde_json::json!({
            "documents": stats.documents,
            "chunks": stats.chunks,
            "text_bytes": text_bytes,
            "index_seconds": build,
            "documents_per_second": stats.documents as f64 / build,
            "index_bytes": index_bytes,
            "index_share_of_text": index_bytes as f64 / text_bytes as f64,
            "unchanged_reindex_seconds": unchanged,
            "unchanged_read_again": again.indexed,
            "search_median_ms": latencies[latencies.len() / 2],
            "search_p99_ms": latencies[latencies.len() * 99 / 100],
        })
    );
    Ok(())
}
