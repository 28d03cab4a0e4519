//! Generates a tree of N small Rust files for the scale benchmark — 100 files a directory,
//! 100 directories a package (`DIR/pkgNN/modNN/fileNNN.rs`), every 997th file (or every
//! EVERY-th) defining a `load_config_N` — the same tree for the same arguments, every time.
//!
//!     cargo run --release --example gen_tree -- DIR N [EVERY]
//!
//! With EVERY = 1 every file holds an answer, so every subagent hands off a finding.
//!
//! The README's scale figures explore this tree (N = 100,000) with `baton explore … --agents
//! 1024 --shards 100000 --max-subagents 100000`.

use std::io::Write;

const WORDS: [&str; 30] = [
    "alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda", "theta", "zeta",
    "parse", "load", "store", "fetch", "cache", "index", "route", "token", "frame", "queue",
    "buffer", "socket", "client", "server", "worker", "shard", "batch", "event", "table", "record",
];

/// A small deterministic generator (SplitMix64), so a tree is the same on every machine.
struct Rng(u64);

impl Rng {
    fn word(&mut self) -> &'static str {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        WORDS[((z ^ (z >> 31)) % WORDS.len() as u64) as usize]
    }
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let every = match args.get(2).map(|e| e.parse::<usize>()) {
        None => Some(997),
        Some(Ok(e)) if e > 0 => Some(e),
        Some(_) => None,
    };
    let (Some(root), Some(n), Some(every)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<usize>().ok()),
        every,
    ) else {
        eprintln!("usage: gen_tree DIR N [EVERY]");
        std::process::exit(2);
    };
    let mut rng = Rng(42);
    for i in 0..n {
        let (dir, file) = (i / 100, i % 100);
        let path = std::path::Path::new(root)
            .join(format!("pkg{:02}", dir / 100))
            .join(format!("mod{:02}", dir % 100));
        if file == 0 {
            std::fs::create_dir_all(&path)?;
        }
        let (a, b, c) = (rng.word(), rng.word(), rng.word());
        let mut out = std::io::BufWriter::new(std::fs::File::create(
            path.join(format!("file{file:03}.rs")),
        )?);
        writeln!(out, "// module {i}: {a} {b} helpers")?;
        writeln!(out, "use crate::{c}::{}Handle;\n", capitalised(b))?;
        writeln!(
            out,
            "pub struct {}{}{i} {{\n    pub {c}_count: usize,\n    pub name: String,\n}}\n",
            capitalised(a),
            capitalised(b)
        )?;
        writeln!(
            out,
            "pub fn {a}_{b}_{i}(input: &str) -> usize {{\n    let {c} = input.len() + {};\n    {c} * 2\n}}",
            i % 97
        )?;
        if i % every == 0 {
            writeln!(
                out,
                "\npub fn load_config_{i}(path: &str) -> String {{\n    // the config is loaded here\n    std::fs::read_to_string(path).unwrap()\n}}"
            )?;
        }
        out.flush()?;
    }
    Ok(())
}
