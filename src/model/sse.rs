//! The server-sent-events line protocol, as the providers stream: `event:` and `data:`
//! fields, events ended by a blank line, `:` comments, LF or CRLF — fed in pieces as they
//! arrive, each byte scanned once.

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `event:` field, empty when none.
    pub(crate) event: String,
    /// The `data:` lines, joined by newlines.
    pub(crate) data: String,
}

/// The server-sent-events line protocol: `event:` and `data:` fields, events ended by a blank
/// line, `:` comments, LF or CRLF. Each byte is scanned once; what was read is dropped from
/// the buffer once no whole line is left.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buffer: Vec<u8>,
    /// Where the next line starts in `buffer`.
    pos: usize,
    /// How far past `pos` the buffer holds no newline (so a long line is scanned once).
    scanned: usize,
    data: Vec<String>,
    event: String,
}

impl SseParser {
    /// Takes the next piece of the stream.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole event; `done`: the stream has ended, so a last event not followed by a
    /// blank line counts too.
    pub(crate) fn take(&mut self, done: bool) -> Option<Event> {
        loop {
            let from = self.pos + self.scanned;
            let Some(rel) = self.buffer[from..].iter().position(|b| *b == b'\n') else {
                self.scanned = self.buffer.len() - self.pos;
                self.buffer.drain(..self.pos);
                self.pos = 0;
                break;
            };
            let end = from + rel;
            let mut line = &self.buffer[self.pos..end];
            self.pos = end + 1;
            self.scanned = 0;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            if line.is_empty() {
                if self.data.is_empty() {
                    self.event.clear();
                    continue;
                }
                return Some(self.dispatch());
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_string(),
                "data" => self.data.push(value.to_string()),
                _ => {}
            }
        }
        if done && self.scanned > 0 {
            // The last line had no newline: it is still a line.
            self.push(b"\n");
            return self.take(true);
        }
        (done && !self.data.is_empty()).then(|| self.dispatch())
    }

    fn dispatch(&mut self) -> Event {
        Event {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data).join("\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sse_lines_split_anywhere_make_the_same_events() {
        let text =
            ": comment\r\nevent: message_start\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: [DONE]";
        let whole = {
            let mut p = SseParser::default();
            p.push(text.as_bytes());
            let mut out = Vec::new();
            while let Some(e) = p.take(true) {
                out.push(e);
            }
            out
        };
        assert_eq!(
            whole,
            vec![
                Event {
                    event: "message_start".into(),
                    data: "{\"a\":\n1}".into()
                },
                Event {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
        // Byte by byte, the same events.
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for b in text.as_bytes() {
            p.push(&[*b]);
            while let Some(e) = p.take(false) {
                out.push(e);
            }
        }
        while let Some(e) = p.take(true) {
            out.push(e);
        }
        assert_eq!(out, whole);
    }

    #[test]
    fn a_long_line_in_small_pieces_is_scanned_once() {
        let mut p = SseParser::default();
        p.push(b"data: ");
        let piece = [b'x'; 1024];
        let start = std::time::Instant::now();
        for _ in 0..8 * 1024 {
            p.push(&piece);
            assert!(p.take(false).is_none());
        }
        p.push(b"\n\n");
        assert_eq!(p.take(false).map(|e| e.data.len()), Some(8 << 20));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
}
