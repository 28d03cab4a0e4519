//! The HTTP layer's unit tests: defaults, ids, error kinds and bodies, backoff, credentials.

use super::*;

/// The documented defaults: connect 10 s, a whole answer 240 s, 90 s idle on a stream;
/// five attempts (four retries), backoff from 0.5 s doubling to at most 60 s; streamed.
#[test]
fn the_defaults_are_the_documented_ones() {
    let o = HttpOptions::default();
    assert_eq!(o.connect_timeout, Duration::from_secs(10));
    assert_eq!(o.request_timeout, Duration::from_secs(240));
    assert_eq!(o.idle_timeout, Duration::from_secs(90));
    assert!(o.stream);
    assert_eq!(o.retry.attempts, 5);
    assert_eq!(o.retry.base, Duration::from_millis(500));
    assert_eq!(o.retry.max_delay, Duration::from_secs(60));
}

#[test]
fn ids_are_safe_and_one_to_one() {
    assert_eq!(safe_id("sa1.2"), "sa1_2e_2");
    assert_ne!(safe_id("a_b"), safe_id("a.b"));
    assert_ne!(safe_id("a_2e_b"), safe_id("a.b"));
    for id in ["sa1.2", "x y", "é", ""] {
        assert!(safe_id(id)
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}

#[test]
fn statuses_and_words_give_the_kind() {
    assert_eq!(classify(429, "", ""), ErrorKind::RateLimited);
    assert_eq!(classify(529, "", ""), ErrorKind::Overloaded);
    assert_eq!(
        classify(500, "x", "overloaded_error"),
        ErrorKind::Overloaded
    );
    assert_eq!(classify(503, "", ""), ErrorKind::Server);
    assert_eq!(classify(401, "", ""), ErrorKind::Auth);
    assert_eq!(
        classify(400, "prompt is too long: 300000 tokens", ""),
        ErrorKind::ContextTooLong
    );
    assert_eq!(classify(400, "bad field", ""), ErrorKind::BadRequest);
    assert!(ErrorKind::RateLimited.retryable() && !ErrorKind::BadRequest.retryable());
}

#[test]
fn backoff_doubles_within_its_cap_and_retry_after_wins() {
    let retry = Retry {
        attempts: 5,
        base: Duration::from_millis(100),
        max_delay: Duration::from_secs(1),
    };
    let e = ModelError::new(ErrorKind::Server, "x");
    for (attempt, full) in [(1, 100), (2, 200), (3, 400), (6, 1000)] {
        let d = retry.delay(attempt, &e).as_millis() as u64;
        assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d} ms");
    }
    let mut limited = ModelError::new(ErrorKind::RateLimited, "x");
    limited.retry_after = Some(Duration::from_secs(3));
    assert_eq!(retry.delay(1, &limited), Duration::from_secs(1));
    limited.retry_after = Some(Duration::from_millis(250));
    assert_eq!(retry.delay(1, &limited), Duration::from_millis(250));
}

#[test]
fn error_bodies_of_every_shape_give_their_message() {
    let (m, k) = error_message(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    assert_eq!((m.as_str(), k.as_str()), ("Overloaded", "overloaded_error"));
    let (m, _) = error_message(
        r#"{"error":{"message":"Invalid schema","type":"invalid_request_error","param":"response_format"}}"#,
    );
    assert_eq!(m, "Invalid schema (param: response_format)");
    assert_eq!(error_message(r#"{"error":"nope"}"#).0, "nope");
    assert_eq!(error_message(r#"{"detail":"gone"}"#).0, "gone");
    assert_eq!(error_message("plain\ntext").0, "plain\ntext");
    // A validation failure's list, and a body cut at the cap, give their messages.
    let (m, _) = error_message(
        r#"{"detail":[{"loc":["body","messages",1,"content"],"msg":"Input should be a valid string","type":"string_type"}]}"#,
    );
    assert_eq!(
        m,
        "Input should be a valid string (body.messages.1.content)"
    );
    let cut = format!(
        r#"{{"error":{{"message":"context length \"exceeded\"","type":"invalid_request_error","trace":"{}"#,
        "y".repeat(70_000)
    );
    let (m, k) = error_message(&cut[..65_536]);
    assert_eq!(
        (m.as_str(), k.as_str()),
        ("context length \"exceeded\"", "invalid_request_error")
    );
}

/// An HTML error page whose text lies past the cap (a long script first) says what it was.
#[test]
fn an_html_page_with_no_text_within_the_cap_is_named() {
    let page = format!("<html><head><script>{}", "x".repeat(70_000));
    assert_eq!(html_text(&page[..65_536]), "");
}

#[test]
fn a_key_is_redacted_before_a_message_is_cut() {
    let key = "sk-SECRET-KEY-0123456789";
    let http = Http::new("anthropic", HttpOptions::default(), ApiKey::new(key)).unwrap();
    for pad in [0, 580, 590, 599, 700] {
        let e = http.error(ErrorKind::Auth, format!("{}{key}", "x".repeat(pad)));
        assert!(!e.message.contains("sk-SECRET"), "pad {pad}: {}", e.message);
        assert!(e.message.chars().count() <= MESSAGE_CHARS + 1);
    }
}

#[test]
fn urls_lose_their_credentials() {
    assert_eq!(
        without_credentials("http://user:pw@127.0.0.1:8080/v1/"),
        "http://127.0.0.1:8080/v1"
    );
    assert!(base_url_of("ftp://x").is_err());
    assert_eq!(
        without_credentials("http://h:1/v1?api-key=SECRET#x"),
        "http://h:1/v1"
    );
    let e = base_url_of("http://h:1/v1?api-key=SECRET").unwrap_err();
    assert!(e.contains("query") && !e.contains("SECRET"), "{e}");
    assert!(!base_url_of("not a url SECRET")
        .unwrap_err()
        .contains("SECRET"));
    assert!(base_url_of("http://h:1/v1#x").is_err());
    let e = Endpoint::new(
        "openai",
        "m",
        Some("http://user:PASSWORD@h:1/v1"),
        "http://x",
        None,
        HttpOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("holds a user name or password") && !e.contains("PASSWORD"));
    assert_eq!(base_url_of("http://h:1/v1/").unwrap(), "http://h:1/v1");
}
