//! The built-in fetcher alone, against a loopback server that keeps every
//! request head it received: what the crawler sends is what it records.

use std::net::Ipv4Addr;

use crawlkeeper_crawl::config::FetchConfig;
use crawlkeeper_crawl::{Fetcher, HttpFetcher};
use crawlkeeper_fetch::ExtraHeader;
use crawlkeeper_model::Known;
use crawlkeeper_testsite::hostile::{HostileServer, Script};
use url::Url;

async fn server() -> HostileServer {
    HostileServer::start(
        Ipv4Addr::new(127, 0, 0, 2),
        vec![("/page", Script::html("<title>page</title>"))],
    )
    .await
    .unwrap()
}

fn fetcher(seed: &Url, headers: &[&str]) -> HttpFetcher {
    let config = FetchConfig {
        capture: true,
        headers: headers
            .iter()
            .map(|h| h.parse::<ExtraHeader>().unwrap())
            .collect(),
        ..FetchConfig::default()
    };
    HttpFetcher::new(&config, std::slice::from_ref(seed)).unwrap()
}

#[tokio::test]
async fn the_recorded_request_head_is_the_one_the_server_received() {
    let site = server().await;
    let url = Url::parse(&site.url("/page")).unwrap();
    let fetcher = fetcher(&url, &["X-Trace: a", "Accept: text/html"]);
    let known = Known {
        etag: Some("\"v1\"".into()),
        ..Known::default()
    };
    let response = fetcher.fetch_known(&url, Some(&known)).await.unwrap();
    assert_eq!(response.status, 200);
    let capture = response.capture.expect("captured");
    let heads = site.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let sent = String::from_utf8_lossy(&capture.request_head);
    assert_eq!(sent, heads[0], "recorded against received");
    let lower = sent.to_ascii_lowercase();
    assert!(lower.starts_with("get /page http/1.1\r\n"), "{sent}");
    assert!(lower.contains("if-none-match: \"v1\"\r\n"), "{sent}");
    assert_eq!(
        lower.matches("accept:").count(),
        1,
        "the user's replaces: {sent}"
    );
    assert_eq!(capture.remote, Some(site.addr()));
}

#[tokio::test]
async fn credentials_in_a_url_are_sent_as_basic_authorization_unless_the_user_set_one() {
    let site = server().await;
    let plain = Url::parse(&site.url("/page")).unwrap();
    let mut with_user = plain.clone();
    with_user.set_username("al ice").unwrap();
    with_user.set_password(Some("p@ss")).unwrap();
    fetcher(&plain, &[]).fetch(&with_user).await.unwrap();
    fetcher(&plain, &["Authorization: Bearer t"])
        .fetch(&with_user)
        .await
        .unwrap();
    let heads: Vec<String> = site
        .heads()
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    assert_eq!(heads.len(), 2, "{heads:?}");
    // base64 of "al ice:p@ss"; the user's own header wins, alone.
    assert!(
        heads[0].contains("authorization: basic ywwgawnlonbac3m=\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].contains("authorization: bearer t\r\n"),
        "{}",
        heads[1]
    );
    assert_eq!(heads[1].matches("authorization").count(), 1, "{}", heads[1]);
    assert!(
        !heads[0].contains("al%20ice") && !heads[0].contains("p@ss"),
        "{}",
        heads[0]
    );
}
