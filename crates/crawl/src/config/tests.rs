//! Tests of the crawl configuration: defaults, validation, serialization.
use super::*;

#[test]
fn defaults_are_the_documented_ones() {
    let c = CrawlConfig::default();
    assert_eq!(c.fetch.connect_timeout, Duration::from_secs(10));
    assert_eq!(c.fetch.request_timeout, Duration::from_secs(30));
    assert_eq!(c.fetch.max_body_bytes, 10 * 1024 * 1024);
    assert!(c.fetch.user_agent.starts_with("crawlkeeper/"));
    assert_eq!(c.scope.max_depth, 5);
    assert_eq!(c.scope.max_url_length, 2048);
    assert_eq!(c.engine.max_workers, 50);
    assert_eq!(c.engine.per_host, 1);
    assert_eq!(c.engine.max_redirects, 10);
    assert_eq!(c.engine.run_timeout, Duration::from_secs(6 * 3600));
    assert_eq!(c.politeness.max_load, 50);
    assert_eq!(c.politeness.retries, 3);
    assert_eq!(c.politeness.max_host_errors, 20);
    assert_eq!(c.politeness.max_crawl_delay, Duration::from_secs(30));
    assert!(c.validate().is_ok());
}

#[test]
fn every_problem_is_reported_at_once() {
    let mut c = CrawlConfig::default();
    c.engine.max_workers = 0;
    c.engine.per_host = 0;
    c.scope.max_pages = Some(0);
    c.politeness.max_load = 0;
    c.politeness.delay = Duration::MAX;
    let err = c.validate().unwrap_err();
    assert_eq!(err.problems.len(), 5, "{err}");
    assert!(
        err.to_string().contains("delay must be at most 365d"),
        "{err}"
    );
}

#[test]
fn config_round_trips_through_json_and_refuses_unknown_fields() {
    let c = CrawlConfig::default();
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains("\"request_timeout\":\"30s\""), "{json}");
    let back: CrawlConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
    let bad = r#"{"engine": {"max_wrkers": 3}}"#;
    assert!(serde_json::from_str::<CrawlConfig>(bad).is_err());
    assert!(!json.contains("\"extract\""), "no fields: no key {json}");
}

#[test]
fn the_http_version_is_in_the_options_only_when_not_the_default() {
    let mut c = CrawlConfig::default();
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("http_version"), "{json}");
    for (version, text) in [
        (HttpVersion::Http1Only, r#""http_version":"http1-only""#),
        (HttpVersion::Http2, r#""http_version":"http2""#),
    ] {
        c.fetch.http_version = version;
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(text), "{json}");
        let back: CrawlConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back.fetch.http_version, version);
    }
}

#[test]
fn fields_are_data_in_the_config_and_names_are_unique() {
    let mut c = CrawlConfig::default();
    c.extract.fields = vec![
        "name=h1".parse().unwrap(),
        "images[]=img@src".parse().unwrap(),
        "d=div::html".parse().unwrap(),
    ];
    let json = serde_json::to_string(&c).unwrap();
    assert!(
        json.contains(r#"{"name":"images","selector":"img","take":{"attr":"src"},"all":true}"#),
        "{json}"
    );
    let back: CrawlConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
    let bad = r#"{"extract": {"fields": [{"name": "a", "selector": "h1", "take": "text", "all": false, "x": 1}]}}"#;
    assert!(serde_json::from_str::<CrawlConfig>(bad).is_err());
    assert!(c.validate().is_ok());
    c.extract.fields.push("name=h2".parse().unwrap());
    let err = c.validate().unwrap_err().to_string();
    assert!(err.contains("the field 'name' is given twice"), "{err}");
}

#[test]
fn meta_jsonld_and_text_are_in_the_identity_only_when_on() {
    let mut c = CrawlConfig::default();
    c.extract.fields = vec!["name=h1".parse().unwrap()];
    let fields_only = serde_json::to_string(&c).unwrap();
    assert!(
        fields_only.contains(
            r#""extract":{"fields":[{"name":"name","selector":"h1","take":"text","all":false}]}"#
        ),
        "{fields_only}"
    );
    c.extract = ExtractConfig {
        meta: true,
        jsonld: true,
        text: Some(DEFAULT_MAX_TEXT),
        ..ExtractConfig::default()
    };
    assert!(!c.extract.is_empty());
    let json = serde_json::to_string(&c).unwrap();
    assert!(
        json.contains(r#""extract":{"fields":[],"meta":true,"jsonld":true,"text":1048576}"#),
        "{json}"
    );
    let back: CrawlConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
    c.extract.meta = false;
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("meta"), "{json}");
}

#[test]
fn noscript_links_are_in_the_options_only_when_on_and_ask_no_fields() {
    let mut c = CrawlConfig::default();
    let off = serde_json::to_string(&c).unwrap();
    assert!(!off.contains(r#""extract":"#), "{off}");
    c.extract.noscript_links = true;
    assert!(!c.extract.is_empty() && c.extract.asks_no_fields());
    let on = serde_json::to_string(&c).unwrap();
    assert!(on.contains(r#""noscript_links":true"#), "{on}");
    let back: CrawlConfig = serde_json::from_str(&on).unwrap();
    assert_eq!(back, c);
}

#[test]
fn a_field_may_not_take_the_name_of_a_structured_one_that_is_on() {
    let mut c = CrawlConfig::default();
    c.extract.fields = ["meta=h1", "jsonld=h2", "text=p"]
        .map(|s| s.parse().unwrap())
        .to_vec();
    assert!(c.validate().is_ok(), "the flags are off");
    c.extract.meta = true;
    c.extract.jsonld = true;
    c.extract.text = Some(0);
    let err = c.validate().unwrap_err();
    assert_eq!(err.problems.len(), 4, "{err}");
    let err = err.to_string();
    for says in [
        "the field 'meta' is --extract-meta's",
        "the field 'jsonld' is --extract-jsonld's",
        "the field 'text' is --text's",
        "max_text must be at least 1",
    ] {
        assert!(err.contains(says), "{says}: {err}");
    }
}
