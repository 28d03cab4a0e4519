//! The stable violation codes of the handoff contract, each in its layer. The codes are a wire
//! format (contracts/handoff.md lists them): they may be added to, never renamed.

use serde::{Deserialize, Serialize};

/// Which layer of validation a code belongs to, in the order they run.
/// ```
/// use baton::Layer;
/// assert!(Layer::Structure < Layer::Resolution && Layer::Observation < Layer::Quotation, "in the order they run");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The three sections and their items, as written.
    Structure,
    /// Each source exists: file inside the root and lines in range, URL well formed, doc known.
    Resolution,
    /// The subagent's own tool calls showed it what it cites.
    Observation,
    /// Text quoted in backticks occurs within the cited lines.
    Quotation,
}

macro_rules! codes {
    ($($variant:ident = $text:literal, $layer:ident, $doc:literal;)*) => {
        /// A stable violation code.
        /// ```
        /// let code = baton::ViolationCode::QuoteNotFound;
        /// assert_eq!(code.as_str(), "quote_not_found");
        /// assert_eq!(code.layer(), baton::Layer::Quotation);
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        #[non_exhaustive]
        pub enum ViolationCode {
            $(#[doc = $doc] $variant,)*
        }

        impl ViolationCode {
            /// Every code, in documentation order.
            pub const ALL: &'static [ViolationCode] = &[$(ViolationCode::$variant,)*];

            /// The code as written in reports and repair prompts.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ViolationCode::$variant => $text,)*
                }
            }

            /// Its layer.
            pub fn layer(self) -> Layer {
                match self {
                    $(ViolationCode::$variant => Layer::$layer,)*
                }
            }

            /// One line on what it means.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ViolationCode::$variant => $doc,)*
                }
            }
        }
    };
}

codes! {
    SectionMissing = "section_missing", Structure, "Settled conclusions or Open items is missing.";
    SectionDuplicated = "section_duplicated", Structure, "A section appears twice.";
    SectionOutOfOrder = "section_out_of_order", Structure, "Sections are not in the order Settled conclusions, Open items, Hard constraints.";
    ConstraintsOmitted = "constraints_omitted", Structure, "Hard constraints is missing; write `- none` when there are none.";
    ConstraintsEmpty = "constraints_empty", Structure, "Hard constraints is present but empty, without `none`.";
    TextOutsideSections = "text_outside_sections", Structure, "Narration before the first section: pass back the three sections only.";
    ItemEmpty = "item_empty", Structure, "A bullet with no text.";
    SourceMissing = "source_missing", Structure, "A settled conclusion without a source identifier.";
    SourceMalformed = "source_malformed", Structure, "A source identifier that is none of the grammar's forms.";
    PointerOnly = "pointer_only", Structure, "A conclusion that points elsewhere (\"see above\") instead of stating the fact.";
    SourceInClaim = "source_in_claim", Structure, "A source identifier in brackets inside a claim's text, where it is never checked: cite it among the sources.";
    JsonInvalid = "json_invalid", Structure, "The JSON form is not valid JSON (or nests too deep).";
    JsonShape = "json_shape", Structure, "The JSON form lacks a required key, has an unknown one, or a wrong type.";
    TooLarge = "too_large", Structure, "The handoff text is over the size limit.";
    FileNotFound = "file_not_found", Resolution, "A cited file does not exist in the workspace.";
    PathOutsideRoot = "path_outside_root", Resolution, "A cited path is absolute or leaves the workspace root.";
    LineOutOfRange = "line_out_of_range", Resolution, "A cited line range runs past the end of the file.";
    FileUnreadable = "file_unreadable", Resolution, "A cited file is binary, too large or unreadable.";
    DocUnknown = "doc_unknown", Resolution, "A cited document id is not in the corpus.";
    NotObserved = "not_observed", Observation, "Cited lines that the subagent's tool calls never showed it.";
    CallUnknown = "call_unknown", Observation, "A cited `call:ID` that is not a tool call of this subagent.";
    NegativeNotEmpty = "negative_not_empty", Observation, "Negative evidence citing a search that did find matches.";
    NegativeUnmarked = "negative_unmarked", Observation, "A finding citing a search that found nothing: the absence is negative evidence, and must say so.";
    UrlNotFetched = "url_not_fetched", Observation, "A cited URL that the subagent never fetched.";
    DocNotObserved = "doc_not_observed", Observation, "A cited document that the subagent never read.";
    RecordNotObserved = "record_not_observed", Observation, "A cited record that no tool call of the subagent returned.";
    QuoteNotFound = "quote_not_found", Quotation, "Text quoted in backticks does not occur within the cited lines.";
    QuoteUnchecked = "quote_unchecked", Quotation, "Text quoted in backticks under sources that hold no text to check it against (a search that found nothing, a listing, a URL, a document, a record).";
}

impl std::fmt::Display for ViolationCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialise_as_written() {
        for code in ViolationCode::ALL {
            let json = serde_json::to_string(code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn the_contract_documents_every_code() {
        let contract = include_str!("../../contracts/handoff.md");
        for code in ViolationCode::ALL {
            assert!(
                contract.contains(&format!("`{}`", code.as_str())),
                "contracts/handoff.md lacks {code}"
            );
        }
    }
}
