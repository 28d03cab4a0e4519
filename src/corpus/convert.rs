//! Documents to text: HTML, Markdown and plain text turned into blocks (headings, paragraphs,
//! list items, code), keeping what a reader of the page reads and dropping navigation chrome,
//! scripts and styles.

/// What a document is, by its file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Format {
    Html,
    Markdown,
    Text,
}

impl Format {
    /// The format of a file name, or none for a file that is not a document.
    pub(crate) fn of(name: &str) -> Option<Format> {
        let lower = name.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "html" | "htm" | "xhtml" => Some(Format::Html),
            "md" | "markdown" | "mdown" => Some(Format::Markdown),
            "txt" | "text" | "rst" | "adoc" => Some(Format::Text),
            _ => None,
        }
    }
}

/// One block of a document's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    /// A heading and its level (1–6).
    Heading(u8, String),
    /// A paragraph, whitespace collapsed.
    Para(String),
    /// A list item, whitespace collapsed.
    Item(String),
    /// A code block, its lines as written.
    Code(String),
}

/// A converted document: its blocks, and what the page is beyond its text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Converted {
    pub(crate) blocks: Vec<Block>,
    /// An HTML page that only redirects to another (`<meta http-equiv="refresh">`).
    pub(crate) redirect: bool,
    /// Words of the text inside links, and in all (a page of links is a table of contents).
    pub(crate) link_words: usize,
    pub(crate) words: usize,
}

/// Converts a document's text.
pub(crate) fn convert(text: &str, format: Format) -> Converted {
    // A byte order mark is no text (a Markdown file's first heading starts after it).
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match format {
        Format::Html => html(text),
        Format::Markdown => markdown(text),
        Format::Text => plain(text),
    }
}

/// Elements whose content is never text a reader reads on the page.
const SKIPPED: &[&str] = &[
    "head", "script", "style", "nav", "header", "footer", "aside", "svg", "template", "noscript",
    "button", "form", "select", "iframe", "object", "canvas", "title", "textarea",
];
/// Elements whose content is raw text up to their closing tag.
const RAW: &[&str] = &["script", "style", "textarea", "title"];
/// Elements that end a block.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "br",
    "hr",
    "tr",
    "td",
    "th",
    "table",
    "blockquote",
    "section",
    "article",
    "main",
    "figure",
    "figcaption",
    "details",
    "summary",
    "pre",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
];

/// One tag as read: its name (lower case), whether it closes, and the attributes kept.
struct Tag {
    name: String,
    closing: bool,
    attrs: Vec<(String, String)>,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A tag whose element a reader never sees: chrome by its name or its ARIA role, or
    /// hidden.
    fn hides(&self) -> bool {
        SKIPPED.contains(&self.name.as_str())
            || matches!(
                self.attr("role"),
                Some("navigation" | "banner" | "contentinfo" | "search")
            )
            || self.attr("hidden").is_some()
            || self.attr("aria-hidden") == Some("true")
    }
}

/// Reads the tag starting at `<` at byte `at`; returns it and the byte after `>`.
fn read_tag(s: &str, at: usize) -> Option<(Tag, usize)> {
    let rest = &s[at + 1..];
    let closing = rest.starts_with('/');
    let body_start = at + 1 + usize::from(closing);
    let first = s[body_start..].chars().next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    let mut i = body_start;
    let bytes = s.as_bytes();
    while i < s.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'-') {
        i += 1;
    }
    let name = s[body_start..i].to_ascii_lowercase();
    let mut attrs = Vec::new();
    loop {
        while i < s.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= s.len() {
            return Some((
                Tag {
                    name,
                    closing,
                    attrs,
                },
                s.len(),
            ));
        }
        if bytes[i] == b'>' {
            return Some((
                Tag {
                    name,
                    closing,
                    attrs,
                },
                i + 1,
            ));
        }
        let start = i;
        while i < s.len()
            && !matches!(bytes[i], b'=' | b'>' | b'/')
            && !bytes[i].is_ascii_whitespace()
        {
            i += 1;
        }
        let attr = s[start..i].to_ascii_lowercase();
        let mut value = String::new();
        if i < s.len() && bytes[i] == b'=' {
            i += 1;
            match bytes.get(i) {
                Some(q @ (b'"' | b'\'')) => {
                    let end = s[i + 1..].find(*q as char).map_or(s.len(), |e| i + 1 + e);
                    value = decode_entities(&s[i + 1..end]);
                    i = (end + 1).min(s.len());
                }
                _ => {
                    let start = i;
                    while i < s.len() && bytes[i] != b'>' && !bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    value = decode_entities(&s[start..i]);
                }
            }
        }
        if i == start {
            i += 1;
        }
        attrs.push((attr, value));
    }
}

/// The text being built: the open block and the blocks done.
#[derive(Default)]
struct Builder {
    out: Converted,
    text: String,
    heading: Option<u8>,
    item: bool,
    pre: bool,
}

impl Builder {
    fn flush(&mut self) {
        let text = std::mem::take(&mut self.text);
        if self.pre {
            let code = text.trim_matches('\n').to_string();
            if !code.trim().is_empty() {
                self.out.blocks.push(Block::Code(code));
            }
            return;
        }
        let text = collapse(&text);
        if text.is_empty() {
            return;
        }
        self.out.words += text.split_whitespace().count();
        let block = match (self.heading, self.item) {
            (Some(level), _) => Block::Heading(level, text),
            (None, true) => Block::Item(text),
            (None, false) => Block::Para(text),
        };
        self.out.blocks.push(block);
    }

    fn push_text(&mut self, text: &str, in_link: bool) {
        let decoded = decode_entities(text);
        if in_link {
            self.out.link_words += decoded.split_whitespace().count();
        }
        self.text.push_str(&decoded);
    }

    /// A block tag opens or closes: the open block ends.
    fn block_tag(&mut self, tag: &Tag) {
        self.flush();
        let level = tag
            .name
            .strip_prefix('h')
            .and_then(|n| n.parse::<u8>().ok())
            .filter(|n| (1..=6).contains(n));
        if tag.closing {
            if level.is_some() {
                self.heading = None;
            }
            match tag.name.as_str() {
                "li" | "dt" | "dd" => self.item = false,
                "pre" => self.pre = false,
                _ => {}
            }
        } else {
            if level.is_some() {
                self.heading = level;
            }
            match tag.name.as_str() {
                "li" | "dt" | "dd" => self.item = true,
                "pre" => self.pre = true,
                _ => {}
            }
        }
    }
}

/// An HTML page to blocks. Only the `<main>` element is read when the page has one (the rest
/// is the site's chrome); elements a reader never sees are skipped wherever they are.
fn html(s: &str) -> Converted {
    let lower = s.to_ascii_lowercase();
    let has_main = lower.match_indices("<main").any(|(at, m)| {
        matches!(
            lower.as_bytes().get(at + m.len()),
            Some(b'>' | b' ' | b'\t' | b'\n' | b'\r' | b'/')
        )
    });
    let mut b = Builder::default();
    // The element skipped, and how deep in elements of its name we are.
    let mut skipping: Option<(String, usize)> = None;
    let mut in_main = !has_main;
    let mut main_depth = 0usize;
    let mut link_depth = 0usize;
    let mut i = 0;
    while i < s.len() {
        let Some(lt) = s[i..].find('<').map(|p| i + p) else {
            if skipping.is_none() && in_main {
                b.push_text(&s[i..], link_depth > 0);
            }
            break;
        };
        if lt > i && skipping.is_none() && in_main {
            b.push_text(&s[i..lt], link_depth > 0);
        }
        if s[lt..].starts_with("<!--") {
            i = s[lt + 4..].find("-->").map_or(s.len(), |e| lt + 4 + e + 3);
            continue;
        }
        if s[lt..].starts_with("<!") || s[lt..].starts_with("<?") {
            i = s[lt..].find('>').map_or(s.len(), |e| lt + e + 1);
            continue;
        }
        let Some((tag, after)) = read_tag(s, lt) else {
            if skipping.is_none() && in_main {
                b.push_text("<", link_depth > 0);
            }
            i = lt + 1;
            continue;
        };
        i = after;
        if tag.name == "meta"
            && tag
                .attr("http-equiv")
                .is_some_and(|v| v.eq_ignore_ascii_case("refresh"))
        {
            b.out.redirect = true;
        }
        if !tag.closing && RAW.contains(&tag.name.as_str()) {
            let close = format!("</{}", tag.name);
            i = lower[i..].find(&close).map_or(s.len(), |e| i + e);
            if skipping.is_none() && in_main && !SKIPPED.contains(&tag.name.as_str()) {
                b.push_text(&s[after..i], false);
            }
            continue;
        }
        if let Some((name, depth)) = &mut skipping {
            if *name == tag.name {
                if tag.closing {
                    *depth -= 1;
                    if *depth == 0 {
                        skipping = None;
                    }
                } else if !is_void(&tag.name) {
                    *depth += 1;
                }
            }
            continue;
        }
        if has_main && tag.name == "main" {
            if tag.closing {
                main_depth = main_depth.saturating_sub(1);
                in_main = main_depth > 0;
            } else {
                main_depth += 1;
                in_main = true;
            }
        }
        if !tag.closing && tag.hides() && !is_void(&tag.name) {
            if in_main {
                b.flush();
            }
            skipping = Some((tag.name.clone(), 1));
            continue;
        }
        if !(in_main || (tag.name == "main" && tag.closing)) {
            continue;
        }
        match tag.name.as_str() {
            "a" if tag.closing => link_depth = link_depth.saturating_sub(1),
            "a" => link_depth += 1,
            name if BLOCKS.contains(&name) => b.block_tag(&tag),
            _ => {}
        }
    }
    b.flush();
    b.out
}

fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "br"
            | "col"
            | "embed"
            | "hr"
            | "img"
            | "input"
            | "link"
            | "meta"
            | "source"
            | "track"
            | "wbr"
    )
}

/// Whitespace runs as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// HTML character references decoded: numeric ones and the common named ones (others kept
/// as written).
pub(crate) fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..]
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '#')
            .map(|e| e + 1);
        let decoded = end.filter(|e| rest[*e..].starts_with(';')).and_then(|e| {
            let name = &rest[1..e];
            entity(name).map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "times" => '×',
        "rarr" => '→',
        "larr" => '←',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "para" => '¶',
        "sect" => '§',
        _ => return None,
    })
}

/// A Markdown document to blocks: ATX headings, fenced and indented code, list items and
/// paragraphs (inline markup kept as written).
fn markdown(s: &str) -> Converted {
    let mut out = Converted::default();
    let mut para: Vec<&str> = Vec::new();
    let mut item: Option<Vec<&str>> = None;
    let mut code: Option<(String, Vec<&str>)> = None;
    let flush = |out: &mut Converted, para: &mut Vec<&str>, item: &mut Option<Vec<&str>>| {
        if !para.is_empty() {
            let text = collapse(&para.join(" "));
            out.words += text.split_whitespace().count();
            out.blocks.push(Block::Para(text));
            para.clear();
        }
        if let Some(lines) = item.take() {
            let text = collapse(&lines.join(" "));
            out.words += text.split_whitespace().count();
            out.blocks.push(Block::Item(text));
        }
    };
    for line in s.lines() {
        let trimmed = line.trim_start();
        if code.is_none() {
            out.link_words += markdown_link_words(trimmed);
        }
        if let Some((fence, lines)) = &mut code {
            if trimmed.starts_with(fence.as_str()) {
                let text = lines.join("\n");
                if !text.trim().is_empty() {
                    out.blocks.push(Block::Code(text));
                }
                code = None;
            } else {
                lines.push(line);
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            flush(&mut out, &mut para, &mut item);
            code = Some((trimmed[..3].to_string(), Vec::new()));
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut out, &mut para, &mut item);
            continue;
        }
        let hashes = trimmed.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            flush(&mut out, &mut para, &mut item);
            let text = collapse(trimmed[hashes..].trim().trim_end_matches('#'));
            if !text.is_empty() {
                out.words += text.split_whitespace().count();
                out.blocks.push(Block::Heading(hashes as u8, text));
            }
            continue;
        }
        if let Some(rest) = list_item(trimmed) {
            flush(&mut out, &mut para, &mut item);
            item = Some(vec![rest]);
            continue;
        }
        let continues = line.starts_with([' ', '\t']);
        match &mut item {
            Some(lines) if continues => lines.push(trimmed),
            Some(_) => {
                flush(&mut out, &mut para, &mut item);
                para.push(trimmed);
            }
            None => para.push(trimmed),
        }
    }
    if let Some((_, lines)) = code {
        let text = lines.join("\n");
        if !text.trim().is_empty() {
            out.blocks.push(Block::Code(text));
        }
    }
    flush(&mut out, &mut para, &mut item);
    out
}

/// Words inside the links of a Markdown line (`[text](target)`).
fn markdown_link_words(line: &str) -> usize {
    let mut n = 0;
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find("](") else {
            break;
        };
        n += rest[..close].split_whitespace().count();
        rest = &rest[close + 2..];
    }
    n
}

/// The text of a list item line (`- `, `* `, `+ `, `1. `, `1) `), if it is one.
fn list_item(line: &str) -> Option<&str> {
    if let Some(rest) = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
    {
        return Some(rest.trim());
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && digits < 10)
        .then(|| &line[digits..])
        .and_then(|r| r.strip_prefix(". ").or_else(|| r.strip_prefix(") ")))
        .map(str::trim)
}

/// Plain text: paragraphs separated by blank lines.
fn plain(s: &str) -> Converted {
    let mut out = Converted::default();
    for para in s.split("\n\n") {
        let text = collapse(para);
        if !text.is_empty() {
            out.words += text.split_whitespace().count();
            out.blocks.push(Block::Para(text));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_keeps_the_main_text_and_drops_chrome() {
        let page = r##"<!DOCTYPE html><html><head><title>T</title><style>p{}</style></head>
<body><nav><a href="a.html">Chapter A</a></nav><div id="menu">Book title</div>
<main><h1 id="x"><a class="header" href="#x">Closures &amp; capture</a></h1>
<p>Closures capture <em>disjoint</em> fields.
 Since 2021.</p><script>var x = "<p>no</p>";</script>
<ul><li>one &lt;item&gt;</li><li>two</li></ul>
<pre><code>let _ = &amp;a;
let b = 1;</code></pre></main><footer>Footer</footer></body></html>"##;
        let c = convert(page, Format::Html);
        assert_eq!(
            c.blocks,
            vec![
                Block::Heading(1, "Closures & capture".into()),
                Block::Para("Closures capture disjoint fields. Since 2021.".into()),
                Block::Item("one <item>".into()),
                Block::Item("two".into()),
                Block::Code("let _ = &a;\nlet b = 1;".into()),
            ]
        );
        assert!(!c.redirect);
    }

    #[test]
    fn a_page_without_main_drops_its_navigation_and_a_redirect_is_seen() {
        let page =
            "<html><body><nav>Home | Next</nav><p>Body text.</p><aside>ad</aside></body></html>";
        let c = convert(page, Format::Html);
        assert_eq!(c.blocks, vec![Block::Para("Body text.".into())]);
        let stub =
            r#"<meta http-equiv="Refresh" content="0; URL=x.html"><p>Redirecting to... x.html</p>"#;
        assert!(convert(stub, Format::Html).redirect);
    }

    #[test]
    fn broken_html_is_no_panic() {
        for page in [
            "<",
            "<a",
            "<a href=\"x",
            "&#xFFFFFFFF;",
            "<p>é<",
            "<!--",
            "<script>",
            "&",
            "<é>",
        ] {
            let _ = convert(page, Format::Html);
        }
        assert_eq!(
            decode_entities("a &amp b &#38; &#x26; &bogus;"),
            "a &amp b & & &bogus;"
        );
    }

    #[test]
    fn a_markdown_page_of_links_counts_its_link_words() {
        let toc = "# Contents\n\n- [Getting started](start.md)\n- [The config file](config.md)\n";
        let c = convert(toc, Format::Markdown);
        assert_eq!(c.link_words, 5);
        let page = "<main><p>Short <main-content>x</main-content></p></main>";
        assert_eq!(convert(page, Format::Html).blocks.len(), 1);
        assert_eq!(
            convert("<main-content><p>Kept.</p></main-content>", Format::Html).blocks,
            vec![Block::Para("Kept.".into())],
            "a tag whose name starts with main is not <main>"
        );
    }

    #[test]
    fn markdown_blocks() {
        let md = "# Title\n\nSome text\nwrapped.\n\n- item one\n  continued\n- item two\n\n```rust\nfn x() {}\n```\n## Next ##\nEnd.";
        let c = convert(md, Format::Markdown);
        assert_eq!(
            c.blocks,
            vec![
                Block::Heading(1, "Title".into()),
                Block::Para("Some text wrapped.".into()),
                Block::Item("item one continued".into()),
                Block::Item("item two".into()),
                Block::Code("fn x() {}".into()),
                Block::Heading(2, "Next".into()),
                Block::Para("End.".into()),
            ]
        );
    }
}
