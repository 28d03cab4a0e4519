//! Ranking, pure: the order a report gives its findings, and which of them answer. What
//! defines or computes the thing asked about comes before where it is used, a use before a
//! mention; code before comments; source before tests, benches, examples and docs; a finding
//! tied to the question only by its common words after one that names its subject.
//! Findings citing the same lines (or lines a few apart in one file) are one, citing every
//! range. Each finding keeps the reason of its rank.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use super::code_lines::{called_searched, comment_lines, in_test_module, searched_calls};
use super::relevance::{LineMatches, Rarity};
use crate::handoff::{Conclusion, Files};
use crate::source::{path_factor, SourceId};

/// A pattern weighing at least this share of the heaviest weight found names the question's
/// subject (the rarest of what was searched); one lighter is a common word.
pub(crate) const SUBJECT_SHARE: f64 = 0.6;
/// A finding that names the subject answers when it scores at least this share of the best
/// (half); below it, it is listed after the answers.
pub(crate) const ANSWER_SHARE: f64 = 0.5;
/// How many lines past a cited range are read to find the definition a doc comment documents.
const DOC_LOOKAHEAD: u32 = 40;
/// Two ranges of one file this few lines apart cite one place.
const NEAR_LINES: u32 = 1;

/// What a finding's cited lines do with what was searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Role {
    /// A definition whose line holds a searched term.
    Defines,
    /// A line of code holding a searched term.
    Computes,
    /// A call of a searched name (a use).
    Uses,
    /// A comment, a doc comment or a document's prose.
    Mentions,
    /// Nothing to read (a passage, a record): neither raised nor lowered.
    Unread,
}

impl Role {
    fn factor(self) -> f64 {
        match self {
            Role::Defines => 1.0,
            Role::Computes => 0.85,
            Role::Unread => 0.85,
            Role::Uses => 0.7,
            Role::Mentions => 0.4,
        }
    }

    /// Definitions and code first, then uses, then mentions.
    fn tier(self) -> u8 {
        match self {
            Role::Defines | Role::Computes | Role::Unread => 0,
            Role::Uses => 1,
            Role::Mentions => 2,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Role::Defines => "defines it",
            Role::Computes => "code that computes it",
            Role::Uses => "a use",
            Role::Mentions => "a comment or a document's mention",
            Role::Unread => "a cited passage",
        }
    }
}

/// A finding with its place in the order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ranked {
    pub(crate) conclusion: Conclusion,
    /// Why it stands where it does, for `--json`'s `rank_reason`.
    pub(crate) reason: String,
    /// Whether it answers (names the subject and scores near the best): the rest are listed
    /// after the answers, as also found.
    pub(crate) answers: bool,
    score: f64,
    role: Role,
}

/// What the ranking reads of one finding.
struct Facts {
    role: Role,
    /// The kind of file it cites: 1 for source, less for tests, examples, docs, metadata.
    file: f64,
    /// Its file's words were test code (a `#[cfg(test)]` module, a `#[test]`).
    test_code: bool,
    /// The heaviest searched pattern its claim and cited lines match.
    heaviest: f64,
    rarity: f64,
}

/// Orders `findings` (in the order they came) and marks those that answer. `files` gives the
/// cited lines (a finding with none to read keeps its claim alone); `rarity` weighs what the
/// run searched; `follow_up` tells a finding only a follow-up made, and which follow-up
/// (ranked after the first wave's: they are links of what those found): of those, only the
/// definition of the name it traced answers (the link), its uses are listed after.
pub(crate) fn rank(
    findings: Vec<Conclusion>,
    files: &dyn Files,
    rarity: &Rarity,
    follow_up: &dyn Fn(&Conclusion) -> Option<usize>,
) -> Vec<Ranked> {
    let facts: Vec<Facts> = findings.iter().map(|c| facts(c, files, rarity)).collect();
    // The question's own findings set the bars: a follow-up searched a name of its own, rarer
    // than the question's words, and is a link of what they found, not a rival.
    let own: Vec<bool> = findings.iter().map(|c| follow_up(c).is_none()).collect();
    let any_own = own.iter().any(|o| *o);
    let sets_bar = |i: usize| own[i] || !any_own;
    // The subject: the rarest searched terms a finding holds. With nothing searched (a model
    // that only read), nothing tells it apart.
    let heaviest = (0..facts.len())
        .filter(|i| sets_bar(*i))
        .map(|i| facts[i].heaviest)
        .fold(0.0, f64::max);
    let searched = heaviest > 0.0;
    let subject_floor = heaviest * SUBJECT_SHARE;
    // A finding, whether it names the subject, its tiers, whether it sets the bars.
    type Scored = (Ranked, bool, (bool, u8, u8), bool);
    let mut scored: Vec<Scored> = findings
        .into_iter()
        .zip(facts)
        .enumerate()
        .map(|(i, (c, facts))| {
            let names_subject =
                !searched || (facts.heaviest > 0.0 && facts.heaviest >= subject_floor);
            let file = if facts.test_code {
                facts.file.min(0.6)
            } else {
                facts.file
            };
            let score = facts.rarity * facts.role.factor() * file;
            let reason = reason(&facts, file, names_subject);
            let tiers = (follow_up(&c).is_some(), file_tier(file), facts.role.tier());
            (
                Ranked {
                    conclusion: c,
                    reason,
                    answers: false,
                    score,
                    role: facts.role,
                },
                names_subject,
                tiers,
                sets_bar(i),
            )
        })
        .collect();
    // The subject first; then the first wave's findings before the follow-ups' links; then
    // source before tests before docs; then definitions and code before uses before
    // mentions; then the weight of what it matches. Ties keep the order they came in.
    scored.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(a.2.cmp(&b.2))
            .then(b.0.score.total_cmp(&a.0.score))
    });
    let best = scored
        .iter()
        .filter(|(_, s, _, bar)| *s && *bar)
        .map(|(r, _, _, _)| r.score)
        .fold(0.0, f64::max);
    let mut out: Vec<Ranked> = Vec::new();
    // Each kept finding's cited ranges by file: a finding is checked against its files' only.
    let mut places: HashMap<String, Vec<(u32, u32, usize)>> = HashMap::new();
    // The follow-ups that settled their link already.
    let mut linked: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for (mut r, names_subject, _, _) in scored {
        let ranges: Vec<(&str, u32, u32)> = r
            .conclusion
            .sources
            .iter()
            .filter_map(SourceId::file_lines)
            .collect();
        let same = ranges.iter().find_map(|(p, a, b)| {
            places.get(*p)?.iter().find_map(|(c, d, i)| {
                (*a <= d.saturating_add(NEAR_LINES) && *c <= b.saturating_add(NEAR_LINES))
                    .then_some(*i)
            })
        });
        if let Some(i) = same {
            let kept = &mut out[i];
            for s in r.conclusion.sources {
                if !kept.conclusion.sources.contains(&s) {
                    if let Some((p, a, b)) = s.file_lines() {
                        places.entry(p.to_string()).or_default().push((a, b, i));
                    }
                    kept.conclusion.sources.push(s);
                }
            }
            continue;
        }
        for (p, a, b) in ranges {
            places
                .entry(p.to_string())
                .or_default()
                .push((a, b, out.len()));
        }
        let from = follow_up(&r.conclusion);
        // A follow-up settles one link: its best definition of the name it traced (or, in
        // research, its best passage of the term it asked about).
        let link = match from {
            Some(f) => (r.role == Role::Defines || is_passage(&r)) && linked.insert(f),
            None => true,
        };
        r.answers = names_subject && r.score >= best * ANSWER_SHARE && link;
        if from.is_some() && !link {
            r.reason.push_str(
                "; a follow-up's finding other than its best definition of the traced name (or its best passage of the term)",
            );
        }
        out.push(r);
    }
    // The answers first; the order within each part is the rank.
    out.sort_by_key(|r| !r.answers);
    out
}

/// A research finding: passages of documents, nothing to read as code.
fn is_passage(r: &Ranked) -> bool {
    r.role == Role::Unread
        && r.conclusion
            .sources
            .iter()
            .all(|s| matches!(s, SourceId::Doc { .. }))
}

/// Source first, then tests, benches and examples, then docs and metadata.
fn file_tier(file: f64) -> u8 {
    if file >= 1.0 {
        0
    } else if file >= 0.6 {
        1
    } else {
        2
    }
}

fn reason(facts: &Facts, file: f64, names_subject: bool) -> String {
    let kind = if facts.test_code {
        "test code"
    } else if file >= 1.0 {
        "source"
    } else if file >= 0.6 {
        "a test, bench or example"
    } else if file >= 0.4 {
        "docs"
    } else {
        "metadata"
    };
    format!(
        "{}; {} in {kind}; {}",
        if names_subject {
            "names the question's subject"
        } else {
            "tied to the question only by common words"
        },
        facts.role.label(),
        format_args!(
            "weight {:.2}",
            (facts.rarity * facts.role.factor() * file).max(0.0)
        )
    )
}

/// A definition line, its name captured.
fn definition() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern(?:\s+"[^"]*")?|default|export|static|abstract|final|private|public|protected)\s+)*(?:fn|struct|enum|trait|union|type|const|static|mod|impl|macro_rules!|class|def|function|interface|func|#define)\s+(?:<[^>]*>\s*)?(?:&?'?[\p{XID_Start}_][\p{XID_Continue}]*::)*([\p{XID_Start}_][\p{XID_Continue}]*)"#,
        )
        .expect("a valid pattern")
    })
}

/// Reads what ranking needs of one finding: its cited lines, classified.
fn facts(c: &Conclusion, files: &dyn Files, rarity: &Rarity) -> Facts {
    let mut role = Role::Unread;
    let mut file: f64 = 0.0;
    let mut test_code = false;
    let claimed = rarity.weights(&c.claim);
    let mut heaviest = claimed.first().copied().unwrap_or(0.0);
    // The searched names cited code calls when it ties two or more of them together: they
    // weigh with the claim's words (a claim that names one call says less than its code).
    let mut tied: Vec<String> = Vec::new();
    // Only when no line can be read does the claim's wording tell a use.
    let calls = c.claim.contains(" calls `");
    for source in &c.sources {
        let (path, a, b) = match source {
            SourceId::File { path, lines } => match lines {
                Some((a, b)) => (path.as_str(), *a, *b),
                None => {
                    file = file.max(path_factor(path));
                    continue;
                }
            },
            _ => continue,
        };
        let factor = path_factor(path);
        file = file.max(factor);
        let Ok(text) = files.text(path) else {
            continue;
        };
        let cited = text.lines(a, b);
        let before = text.lines(1, a.saturating_sub(1));
        test_code |= cited.contains("#[test]") || in_test_module(before);
        // The cited lines and, to find what a doc comment documents, the lines after them;
        // whether each is a comment (a block comment or a docstring opened above counts),
        // and what each matches.
        let read_on = text.lines(
            a,
            b.saturating_add(DOC_LOOKAHEAD)
                .min(text.line_count() as u32),
        );
        let comments = comment_lines(path, before, read_on);
        let lines: Vec<&str> = read_on.lines().collect();
        let matched = rarity.lines_matched(read_on);
        let cited_lines = cited.lines().count().min(lines.len());
        let weights: Vec<f64> = (0..cited_lines).map(|n| matched.weight(n)).collect();
        heaviest = weights.iter().copied().fold(heaviest, f64::max);
        let calls_here = called_searched(&lines, cited_lines, &comments, &matched);
        let ties = calls_here.len() >= 2;
        if ties && factor > 0.4 {
            tied.extend(calls_here);
        }
        let here = if factor <= 0.4 {
            Role::Mentions
        } else if weights.iter().all(|w| *w == 0.0) && calls {
            // Nothing read holds a term: the claim's own words tell the use.
            Role::Uses
        } else {
            role_of_lines(&c.claim, &lines, &weights, &comments, &matched, ties)
        };
        role = role.min(here);
    }
    if file == 0.0 {
        file = 1.0;
    }
    Facts {
        role,
        file,
        test_code,
        heaviest,
        rarity: if tied.is_empty() {
            Rarity::sum(&claimed)
        } else {
            Rarity::sum(&rarity.weights(&format!("{}\n{}", c.claim, tied.join(" "))))
        },
    }
}

/// What cited lines do with what was searched (`lines`: the cited lines, then the lines read
/// on past them; `weights`: one per cited line). The lines the claim quotes (its hit) decide
/// when it quotes any; else every line holding a searched term. A definition whose name holds
/// a searched term defines it — as does a comment documenting one (the next code line, past
/// comments and attributes); a line calling a searched name uses it — unless the cited code
/// `ties` two or more searched terms by calling them, which computes; other code computes it;
/// a comment mentions it.
fn role_of_lines(
    claim: &str,
    lines: &[&str],
    weights: &[f64],
    comments: &[bool],
    matched: &LineMatches<'_>,
    ties: bool,
) -> Role {
    let quoted: Vec<&str> = claim
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|q| q.chars().count() >= 4)
        .collect();
    let cited = weights.len().min(lines.len());
    let mut chosen: Vec<usize> = (0..cited)
        .filter(|i| quoted.iter().any(|q| lines[*i].contains(q)))
        .collect();
    if chosen.is_empty() {
        chosen = (0..cited).filter(|i| weights[*i] > 0.0).collect();
    }
    let defines = |n: usize| {
        definition()
            .captures(lines[n])
            .is_some_and(|c| matched.holds(n, &c[1]))
    };
    let documented = |i: usize| {
        (i + 1..lines.len())
            .find(|n| {
                let l = lines[*n].trim_start();
                !comments.get(*n).copied().unwrap_or(false)
                    && !l.trim().is_empty()
                    && !l.starts_with("#[")
            })
            .is_some_and(defines)
    };
    chosen
        .into_iter()
        .map(|i| {
            if comments.get(i).copied().unwrap_or(false) {
                if documented(i) {
                    Role::Defines
                } else {
                    Role::Mentions
                }
            } else if defines(i) {
                Role::Defines
            } else if !ties && !searched_calls(lines[i], |name| matched.holds(i, name)).is_empty() {
                Role::Uses
            } else {
                Role::Computes
            }
        })
        .min()
        .unwrap_or(Role::Mentions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::finding;
    use crate::handoff::MemoryFiles;

    /// "retry" is rare (the subject), "config" common.
    fn rarity() -> Rarity {
        Rarity::from_counts([("^", 10_000), ("retr", 4), ("config", 900)])
    }

    /// The first source of each finding ranked among the answers, in order.
    fn answer_sources(ranked: &[Ranked]) -> Vec<String> {
        ranked
            .iter()
            .filter(|r| r.answers)
            .map(|r| r.conclusion.sources[0].to_string())
            .collect()
    }

    fn order(files: &MemoryFiles, findings: Vec<Conclusion>) -> Vec<String> {
        rank(findings, files, &rarity(), &|_| None)
            .into_iter()
            .map(|r| r.conclusion.sources[0].to_string())
            .collect()
    }

    #[test]
    fn a_definition_comes_before_a_use_and_a_use_before_a_mention() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", "// retry later\n");
        files.insert("src/b.rs", "    let d = retry_delay(3);\n");
        files.insert("src/c.rs", "pub fn retry_delay(n: u32) -> u32 {\n");
        let got = order(
            &files,
            vec![
                finding("a.rs mentions retry", "src/a.rs:1"),
                finding("`go` calls `retry_delay`", "src/b.rs:1"),
                finding("c.rs defines retry_delay", "src/c.rs:1"),
            ],
        );
        assert_eq!(got, ["src/c.rs:1", "src/b.rs:1", "src/a.rs:1"]);
    }

    #[test]
    fn code_comes_before_a_comment() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", "/// the retry count\n");
        files.insert("src/b.rs", "    if retries > max { return; }\n");
        let got = order(
            &files,
            vec![
                finding("a.rs line 1 mentions retry", "src/a.rs:1"),
                finding("b.rs line 1 holds retry", "src/b.rs:1"),
            ],
        );
        assert_eq!(got, ["src/b.rs:1", "src/a.rs:1"]);
    }

    #[test]
    fn source_comes_before_tests_benches_examples_and_docs() {
        let mut files = MemoryFiles::new();
        let code = "    let n = retries + 1;\n";
        for path in [
            "docs/guide.md",
            "tests/t.rs",
            "benches/b.rs",
            "examples/e.rs",
            "src/r.rs",
        ] {
            files.insert(path, code);
        }
        files.insert(
            "src/m.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    let n = retries + 1;\n}\n",
        );
        let got = order(
            &files,
            vec![
                finding("docs hold retry", "docs/guide.md:1"),
                finding("a test holds retry", "tests/t.rs:1"),
                finding("a bench holds retry", "benches/b.rs:1"),
                finding("the test module holds retry", "src/m.rs:4"),
                finding("an example holds retry", "examples/e.rs:1"),
                finding("r.rs holds retry", "src/r.rs:1"),
            ],
        );
        assert_eq!(got[0], "src/r.rs:1");
        assert_eq!(got[5], "docs/guide.md:1");
        // Tests, benches, examples and the test module in between, in the order they came.
        assert_eq!(
            &got[1..5],
            [
                "tests/t.rs:1",
                "benches/b.rs:1",
                "src/m.rs:4",
                "examples/e.rs:1"
            ]
        );
        let ranked = rank(
            vec![finding("the test module holds retry", "src/m.rs:4")],
            &files,
            &rarity(),
            &|_| None,
        );
        assert!(
            ranked[0].reason.contains("test code"),
            "{}",
            ranked[0].reason
        );
    }

    #[test]
    fn defining_another_name_around_a_call_is_a_use_not_a_definition() {
        let mut files = MemoryFiles::new();
        files.insert(
            "src/user.rs",
            "fn main() { let c = retry_now(\"demo\"); }\n",
        );
        files.insert(
            "src/retry.rs",
            "pub fn retry_now(s: &str) -> u32 {\n    1\n}\n",
        );
        let got = order(
            &files,
            vec![
                finding("user.rs defines `main`", "src/user.rs:1"),
                finding("retry.rs defines `retry_now`", "src/retry.rs:1-3"),
            ],
        );
        assert_eq!(got, ["src/retry.rs:1-3", "src/user.rs:1"]);
    }

    #[test]
    fn a_follow_up_settles_one_link_after_the_first_waves_answers() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", "pub fn retry_all() { retry_step(); }\n");
        files.insert("src/b.rs", "pub fn retry_step() {}\n");
        files.insert("src/c.rs", "pub fn retry_step_again() {}\n");
        files.insert("src/d.rs", "    retry_step();\n");
        let from_follow_up = |c: &Conclusion| (!c.claim.starts_with("a.rs")).then_some(0);
        let ranked = rank(
            vec![
                finding("b.rs defines retry_step", "src/b.rs:1"),
                finding("c.rs defines retry_step_again", "src/c.rs:1"),
                finding("d.rs calls retry_step", "src/d.rs:1"),
                finding("a.rs defines retry_all", "src/a.rs:1"),
            ],
            &files,
            &rarity(),
            &from_follow_up,
        );
        let answers = answer_sources(&ranked);
        assert_eq!(answers, ["src/a.rs:1", "src/b.rs:1"], "{ranked:?}");
        assert!(ranked[2]
            .reason
            .contains("a follow-up's finding other than"));
    }

    /// Code calling two different searched names ties them together: computing, not a use.
    #[test]
    fn code_calling_two_searched_names_ties_them_and_is_no_mere_use() {
        let mut files = MemoryFiles::new();
        files.insert(
            "src/b.rs",
            "pub fn go() {\n    let d = retry_delay(3);\n    load_config(d);\n}\n",
        );
        files.insert(
            "src/c.rs",
            "pub fn go() {\n    let d = retry_delay(3);\n}\n",
        );
        files.insert(
            "src/d.rs",
            "pub fn go() {\n    let d = retry_delay(3);\n    retry_count(d);\n}\n",
        );
        files.insert(
            "src/e.rs",
            "pub fn load_config() {\n    let d = retry_delay(3);\n}\n",
        );
        let role = |source: &str| {
            let claim = "`go` calls `retry_delay` at line 2: `let d = retry_delay(3);`";
            facts(&finding(claim, source), &files, &rarity()).role
        };
        assert_eq!(role("src/b.rs:1-4"), Role::Computes);
        assert_eq!(role("src/c.rs:1-3"), Role::Uses);
        // Two names one search finds are one term; a definition is no call.
        assert_eq!(role("src/d.rs:1-4"), Role::Uses);
        assert_eq!(role("src/e.rs:1-3"), Role::Uses);
        // What it ties weighs with its claim: the claim names one call, the code two.
        let weight = |source: &str| {
            let claim = "`go` calls `retry_delay` at line 2: `let d = retry_delay(3);`";
            facts(&finding(claim, source), &files, &rarity()).rarity
        };
        assert!(weight("src/b.rs:1-4") > weight("src/c.rs:1-3"));
    }

    /// A follow-up searched a name of its own, rarer than any word of the question: its link
    /// must not raise the bar the question's own findings are held to.
    #[test]
    fn a_follow_ups_rare_name_does_not_demote_the_first_waves_answers() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", "// retry later\n");
        files.insert("src/b.rs", "pub fn from_bytes_7() {}\n");
        let rarity = Rarity::from_counts([("^", 10_000), ("retr", 400), ("from_bytes_7", 1)]);
        let from_follow_up = |c: &Conclusion| c.claim.starts_with("b.rs").then_some(0);
        let ranked = rank(
            vec![
                finding("b.rs defines from_bytes_7", "src/b.rs:1"),
                finding("a.rs mentions retry", "src/a.rs:1"),
            ],
            &files,
            &rarity,
            &from_follow_up,
        );
        let answers = answer_sources(&ranked);
        assert_eq!(answers, ["src/a.rs:1", "src/b.rs:1"], "{ranked:?}");
    }

    #[test]
    fn the_quoted_line_decides_and_a_doc_comment_counts_for_what_it_documents() {
        let mut files = MemoryFiles::new();
        let text = "pub fn retry_all() {}\n// retry once more\nlet x = 1;\n/// The retry state.\n#[derive(Debug)]\npub struct Retry;\n";
        files.insert("src/a.rs", text);
        let role =
            |claim: &str, source: &str| facts(&finding(claim, source), &files, &rarity()).role;
        // The claim quotes the comment: the definition cited around it does not make it one.
        assert_eq!(
            role("a.rs line 2: `// retry once more`", "src/a.rs:1-3"),
            Role::Mentions
        );
        // No quote: every line holding a term counts, the definition among them.
        assert_eq!(role("a.rs mentions retry", "src/a.rs:1-3"), Role::Defines);
        // A doc comment quoted is the definition it documents, read past the cited line.
        assert_eq!(
            role("a.rs line 4: `/// The retry state.`", "src/a.rs:4"),
            Role::Defines
        );
    }

    #[test]
    fn common_words_alone_rank_below_the_subject_and_do_not_answer() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", "pub fn load_config() {}\n");
        files.insert("src/b.rs", "// retry\n");
        let ranked = rank(
            vec![
                finding("a.rs defines load_config", "src/a.rs:1"),
                finding("b.rs mentions retry", "src/b.rs:1"),
            ],
            &files,
            &rarity(),
            &|_| None,
        );
        assert_eq!(ranked[0].conclusion.sources[0].to_string(), "src/b.rs:1");
        assert!(ranked[0].answers);
        assert!(!ranked[1].answers, "{:?}", ranked[1]);
        assert!(ranked[1].reason.contains("only by common words"));
    }

    #[test]
    fn findings_on_one_place_are_one_citing_every_range() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", &"    retry();\n".repeat(40));
        let ranked = rank(
            vec![
                finding("a.rs line 3 retries", "src/a.rs:1-5"),
                finding("a.rs line 7 retries", "src/a.rs:6-9"),
                finding("a.rs line 30 retries", "src/a.rs:30"),
            ],
            &files,
            &rarity(),
            &|_| None,
        );
        assert_eq!(ranked.len(), 2);
        let cited: Vec<String> = ranked[0]
            .conclusion
            .sources
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(cited, ["src/a.rs:1-5", "src/a.rs:6-9"]);
    }

    #[test]
    fn a_weak_finding_is_listed_after_the_answers() {
        let mut files = MemoryFiles::new();
        files.insert("src/a.rs", "pub fn retry_config() {}\n");
        files.insert("docs/b.md", "retry\n");
        let ranked = rank(
            vec![
                finding("docs mention retry", "docs/b.md:1"),
                finding("a.rs defines retry_config", "src/a.rs:1"),
            ],
            &files,
            &rarity(),
            &|_| None,
        );
        assert!(ranked[0].answers && !ranked[1].answers, "{ranked:?}");
    }
}
