//! Waves: after each wave of subagents ends, a pure planner reads the updated checkpoint (the
//! settled findings, what each shard searched) and proposes follow-ups — a name an answering
//! finding uses, traced into the shards that never searched for it. The lead plans them as
//! the next wave (a plan revision in the log), until a wave adds no settled conclusion, the
//! budget runs out, the question needs no follow-up, or `--max-waves` is reached.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;

use super::plan::Shard;
use super::state::LeadState;
use super::{journal, merge};
use crate::contracts::RoleId;
use crate::handoff::Conclusion;
use crate::report::Wave;
use crate::source::SourceId;

/// Most follow-ups one wave plans.
pub(crate) const MAX_FOLLOW_UPS: usize = 3;

/// One wave as planned: its number and its subagents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WavePlan {
    pub(crate) n: u32,
    pub(crate) ids: Vec<String>,
}

/// A follow-up the planner proposes: the question its subagent answers, where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FollowUp {
    pub(crate) question: String,
    pub(crate) paths: Vec<String>,
    pub(crate) because: String,
}

/// What the planner reads of the checkpoint.
pub(crate) struct Checkpointed<'a> {
    /// The answering findings so far, best first, each with the text of the lines it cites.
    pub(crate) answers: &'a [(Conclusion, String)],
    /// Per subagent: the paths it covered and the patterns it searched there.
    pub(crate) searched: Vec<(Vec<String>, Vec<&'a str>)>,
    /// The paths the first wave covered: where follow-ups may look.
    pub(crate) scope: &'a [String],
    /// Follow-up questions planned already.
    pub(crate) asked: &'a [String],
}

/// Whether a question asks how things connect (a path, a call chain, a sequence), so one
/// reader per shard is not enough: a definition question is answered by the first wave.
pub(crate) fn wants_follow_ups(question: &str) -> bool {
    const CONNECTING: &[&str] = &[
        "how", "trace", "path", "flow", "call", "calls", "called", "reach", "reaches", "end",
        "ends", "through", "chain", "after", "then", "pass", "passes", "passed", "tie", "ties",
        "connect", "connects", "lead", "leads", "route", "routes", "get", "gets",
    ];
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.iter().any(|w| CONNECTING.contains(&w.as_str()))
}

/// Names too common to trace: a language's prelude and its commonest methods.
const PRELUDE: &[&str] = &[
    "Some",
    "None",
    "Self",
    "self",
    "String",
    "Vec",
    "Option",
    "Result",
    "Box",
    "Arc",
    "Rc",
    "clone",
    "into",
    "unwrap",
    "expect",
    "iter",
    "push",
    "insert",
    "get",
    "len",
    "new",
    "from",
    "default",
    "format",
    "println",
    "write",
    "as_ref",
    "as_str",
    "to_string",
    "is_some",
    "is_none",
    "is_empty",
    "map",
    "and_then",
    "ok_or",
    "unwrap_or",
    "collect",
    "to_owned",
    "borrow",
    "lock",
    "Default",
    "Debug",
    "Clone",
    "return",
    "match",
    "true",
    "false",
];

/// The names a finding's quoted code uses that are worth tracing: identifiers with an
/// underscore or an inner capital, or called (`name(`), at least four characters long.
pub(crate) fn names_in(claim: &str) -> Vec<String> {
    static IDENT: OnceLock<Regex> = OnceLock::new();
    let ident = IDENT
        .get_or_init(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(\s*\()?").expect("a valid pattern"));
    let mut out = Vec::new();
    for (i, quoted) in claim.split('`').enumerate() {
        if i % 2 == 0 {
            continue;
        }
        for m in ident.find_iter(quoted) {
            let text = m.as_str();
            let called = text.ends_with('(');
            let name = text.trim_end_matches('(').trim_end();
            let shaped = name.contains('_') && name.trim_matches('_').contains('_')
                || name.chars().skip(1).any(|c| c.is_ascii_uppercase())
                    && name.chars().any(|c| c.is_ascii_lowercase());
            if name.len() >= 4
                && (shaped || called)
                && !PRELUDE.contains(&name)
                && !out.iter().any(|n: &String| n == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The names the code of `cited` calls (`name(`), at least four characters long: the
/// callees a finding's lines lead to. Comment lines are passed over.
pub(crate) fn callees_in(cited: &str) -> Vec<String> {
    static CALL: OnceLock<Regex> = OnceLock::new();
    let call = CALL.get_or_init(|| {
        Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:::<[^>]*>)?\(").expect("a valid pattern")
    });
    const KEYWORDS: &[&str] = &[
        "while", "match", "return", "loop", "else", "assert", "panic",
    ];
    let mut out: Vec<String> = Vec::new();
    for line in cited.lines().filter(|l| !super::ranking::is_comment(l)) {
        for c in call.captures_iter(line) {
            let name = &c[1];
            let before = line[..c.get(1).map_or(0, |m| m.start())].trim_end();
            let defined = ["fn", "def", "function", "func"]
                .iter()
                .any(|k| before.ends_with(k));
            if !defined
                && name.len() >= 4
                && !PRELUDE.contains(&name)
                && !KEYWORDS.contains(&name)
                && !out.iter().any(|n| n == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The follow-ups the checkpoint calls for, in order; none when every name the answers use
/// was already searched everywhere the first wave looked.
pub(crate) fn follow_ups(cp: &Checkpointed<'_>) -> Vec<FollowUp> {
    let mut out: Vec<FollowUp> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (answer, cited) in cp.answers {
        let mut names = names_in(&answer.claim);
        for callee in callees_in(cited) {
            if !names.contains(&callee) {
                names.push(callee);
            }
        }
        for name in names {
            if out.len() >= MAX_FOLLOW_UPS {
                return out;
            }
            if !seen.insert(name.to_lowercase()) {
                continue;
            }
            let question = format!("Where is `{name}` defined, and where is it called?");
            if cp.asked.contains(&question) {
                continue;
            }
            let lower = name.to_lowercase();
            // Where it was searched: the paths of every subagent that searched for it.
            let covered: Vec<&String> = cp
                .searched
                .iter()
                .filter(|(_, patterns)| patterns.iter().any(|p| p.to_lowercase().contains(&lower)))
                .flat_map(|(paths, _)| paths.iter())
                .collect();
            if covered.iter().any(|p| p.as_str() == ".") {
                continue;
            }
            let paths: Vec<String> = cp
                .scope
                .iter()
                .filter(|p| !covered.contains(p))
                .cloned()
                .collect();
            if paths.is_empty() {
                continue;
            }
            out.push(FollowUp {
                question,
                because: format!(
                    "`{name}` is named by a finding ({}) and was never searched in {}",
                    cite(answer),
                    crate::source::prose_list(&paths)
                ),
                paths,
            });
        }
    }
    out
}

fn cite(c: &Conclusion) -> String {
    c.sources
        .iter()
        .map(SourceId::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many of `wave`'s findings cite lines no earlier finding cites (a non-file finding by
/// its claim).
pub(crate) fn added(earlier: &[&Conclusion], wave: &[&Conclusion]) -> usize {
    let overlaps = |a: &Conclusion, b: &Conclusion| {
        if a.claim == b.claim {
            return true;
        }
        a.sources
            .iter()
            .filter_map(SourceId::file_lines)
            .any(|(p, a1, a2)| {
                b.sources
                    .iter()
                    .filter_map(SourceId::file_lines)
                    .any(|(q, b1, b2)| p == q && a1 <= b2 && b1 <= a2)
            })
    };
    let mut known: Vec<&Conclusion> = earlier.to_vec();
    let mut n = 0;
    for c in wave {
        if !known.iter().any(|k| overlaps(k, c)) {
            n += 1;
            known.push(c);
        }
    }
    n
}

impl LeadState {
    /// The wave a subagent belongs to (0: none — a verifier's check).
    pub(super) fn wave_of(&self, id: &str) -> u32 {
        self.fleet
            .waves
            .iter()
            .find(|w| w.ids.iter().any(|i| i == id))
            .map_or(0, |w| w.n)
    }

    /// The findings of a wave's accepted handoffs.
    fn findings_of(&self, n: u32) -> Vec<&Conclusion> {
        self.fleet
            .records
            .iter()
            .filter(|r| self.wave_of(&r.summary.id) == n)
            .filter_map(|r| r.handoff.as_ref())
            .flat_map(|h| h.settled_conclusions.iter())
            .filter(|c| c.kind == crate::handoff::ConclusionKind::Finding)
            .collect()
    }

    /// What each wave planned and added, the last with why the run planned no more.
    pub(super) fn wave_summaries(&self) -> Vec<Wave> {
        let mut out: Vec<Wave> = Vec::new();
        let mut earlier: Vec<&Conclusion> = Vec::new();
        for w in &self.fleet.waves {
            let found = self.findings_of(w.n);
            out.push(Wave {
                n: w.n,
                subagents: w.ids.clone(),
                added: added(&earlier, &found),
                stopped_because: None,
            });
            earlier.extend(found);
        }
        if let (Some(last), Some(why)) = (out.last_mut(), &self.fleet.stopped_because) {
            last.stopped_because = Some(why.clone());
        }
        out
    }

    /// Once a wave has ended: plans the next from the checkpoint, or says why there is none
    /// (`fleet.stopped_because`). True when a wave was planned.
    pub(super) fn next_wave(&mut self) -> bool {
        if self.fleet.stopped_because.is_some() || self.cancelled {
            return false;
        }
        let why = self.why_no_wave();
        if let Some(why) = why {
            self.fleet.stopped_because = Some(why);
            return false;
        }
        let follow = self.proposed();
        if follow.is_empty() {
            self.fleet.stopped_because = Some(
                "nothing left to follow: every name the answers use was searched wherever the first wave looked".into(),
            );
            return false;
        }
        let room = self
            .config
            .max_subagents
            .saturating_sub(self.fleet.records.len());
        let n = self.fleet.waves.last().map_or(1, |w| w.n) + 1;
        let mut new: Vec<(String, Shard)> = Vec::new();
        for (i, f) in follow.into_iter().take(room).enumerate() {
            let id = format!("sa{}", self.fleet.records.len() + i + 1);
            new.push((
                id,
                Shard {
                    paths: f.paths,
                    bytes: 0,
                    role: RoleId::EXPLORER,
                    question: Some(f.question),
                },
            ));
        }
        let reason = format!(
            "wave {n}: {} follow-up(s) planned from the checkpoint: {}",
            new.len(),
            new.iter()
                .map(|(id, s)| format!("{id} {}", s.question.as_deref().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let mut listed: Vec<(String, &Shard)> = self
            .fleet
            .records
            .iter()
            .map(|r| (r.summary.id.clone(), &r.shard))
            .collect();
        listed.extend(new.iter().map(|(id, s)| (id.clone(), s)));
        self.log(vec![journal::planned(
            &listed,
            &reason,
            &self.fleet.left_out,
            &self.fleet.not_searched,
        )]);
        self.fleet.waves.push(WavePlan {
            n,
            ids: new.iter().map(|(id, _)| id.clone()).collect(),
        });
        self.adopt_plan(new, Default::default());
        true
    }

    /// Why no further wave is planned, if a rule says so.
    fn why_no_wave(&self) -> Option<String> {
        let last = self.fleet.waves.last()?;
        let explores = self.config.workspace.is_some()
            && self
                .fleet
                .records
                .iter()
                .any(|r| r.shard.role == RoleId::EXPLORER);
        if !explores {
            return Some("only an exploration of a tree plans follow-ups".into());
        }
        if last.n >= 2 {
            let earlier: Vec<&Conclusion> = (1..last.n).flat_map(|n| self.findings_of(n)).collect();
            if added(&earlier, &self.findings_of(last.n)) == 0 {
                return Some(format!("wave {} added no settled conclusion", last.n));
            }
        }
        if last.n as usize >= self.config.max_waves {
            return Some(format!("--max-waves {} reached", self.config.max_waves));
        }
        if self.fleet.records.len() >= self.config.max_subagents {
            return Some(format!(
                "--max-subagents {} reached",
                self.config.max_subagents
            ));
        }
        if self
            .config
            .cost
            .limit()
            .is_some_and(|l| self.config.cost.spent() >= l)
        {
            return Some("the run's cost limit (--max-cost) was reached".into());
        }
        if last.n == 1 && !wants_follow_ups(&self.contexts.search_question) {
            return Some(
                "the question asks where something is, not how things connect: the first wave's answers stand".into(),
            );
        }
        None
    }

    /// The planner's follow-ups from the run's checkpoint: the answers so far, what each
    /// subagent searched where.
    fn proposed(&self) -> Vec<FollowUp> {
        let accepted = self.accepted_handoffs();
        let merged = merge::merge_ranked(
            &accepted,
            &[],
            merge::WHOLE_TREE,
            self.contexts.files.as_ref(),
        );
        let files = self.contexts.files.as_ref();
        let answers: Vec<(Conclusion, String)> = merged
            .handoff
            .settled_conclusions
            .into_iter()
            .filter(|c| c.kind == crate::handoff::ConclusionKind::Finding)
            .map(|c| {
                let cited: Vec<String> = c
                    .sources
                    .iter()
                    .filter_map(SourceId::file_lines)
                    .filter_map(|(p, a, b)| {
                        use crate::handoff::Files;
                        files.text(p).ok().map(|t| t.lines(a, b).to_string())
                    })
                    .collect();
                (c, cited.join("\n"))
            })
            .collect();
        let searched = self
            .fleet
            .records
            .iter()
            .map(|r| {
                let patterns: Vec<&str> = r.searches.iter().map(|s| s.pattern.as_str()).collect();
                (r.shard.paths.clone(), patterns)
            })
            .collect();
        let first: Vec<String> = self
            .fleet
            .records
            .iter()
            .filter(|r| self.wave_of(&r.summary.id) == 1)
            .flat_map(|r| r.shard.paths.clone())
            .collect();
        let asked: Vec<String> = self
            .fleet
            .records
            .iter()
            .filter_map(|r| r.shard.question.clone())
            .collect();
        follow_ups(&Checkpointed {
            answers: &answers,
            searched,
            scope: &first,
            asked: &asked,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(claim: &str, source: &str) -> Conclusion {
        Conclusion {
            claim: claim.into(),
            sources: vec![SourceId::parse(source).unwrap()],
            kind: crate::handoff::ConclusionKind::Finding,
        }
    }

    #[test]
    fn names_worth_tracing_are_taken_from_quoted_code() {
        let names = names_in(
            "In `start` (fn in a/run.rs), line 4: `let pages = flush_pages(&mut self.cache).unwrap();` — mentions `Some`",
        );
        assert_eq!(names, ["flush_pages"]);
        assert!(names_in("no quotes: flush_pages()").is_empty());
    }

    #[test]
    fn a_name_is_followed_only_where_it_was_not_searched() {
        let answers = [(
            finding(
                "`start` calls `flush_pages` at line 4: `flush_pages(x)`",
                "a/run.rs:4",
            ),
            String::new(),
        )];
        let scope = vec!["a".to_string(), "b".to_string()];
        let cp = Checkpointed {
            answers: &answers,
            searched: vec![(vec!["a".into()], vec![r"\bflush_pages\s*\("])],
            scope: &scope,
            asked: &[],
        };
        let f = follow_ups(&cp);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].paths, ["b"]);
        assert!(f[0].question.contains("`flush_pages`"));
        // Searched everywhere: nothing to follow.
        let cp = Checkpointed {
            searched: vec![
                (vec!["a".into()], vec!["flush_pages", "start"]),
                (vec!["b".into()], vec!["flush_pages", "start"]),
            ],
            ..cp
        };
        assert!(follow_ups(&cp).is_empty());
    }

    #[test]
    fn callees_are_taken_from_the_cited_code_not_its_comments() {
        let cited = "pub fn start() {\n    // see old_path(x)\n    let p = collect_pages(cfg);\n    if ok(p) { flush_pages(&p); }\n}\n";
        assert_eq!(callees_in(cited), ["collect_pages", "flush_pages"]);
    }

    #[test]
    fn a_connection_question_wants_follow_ups_and_a_definition_question_does_not() {
        assert!(wants_follow_ups(
            "How does a request get from the router to the handler?"
        ));
        assert!(!wants_follow_ups("Where is the retry delay defined?"));
    }

    #[test]
    fn only_new_lines_count_as_added() {
        let a = finding("a", "src/a.rs:1-10");
        let b = finding("b", "src/a.rs:5-6");
        let c = finding("c", "src/b.rs:1");
        assert_eq!(added(&[&a], &[&b, &c]), 1);
        assert_eq!(added(&[], &[&a, &b]), 1);
    }
}
