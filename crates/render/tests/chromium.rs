//! Real Debian `chromium`, no network at all: the page and everything it
//! asks for is answered from memory by the test's loader, which also
//! writes down what the page asked for.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use crawlkeeper_model::FetchResponse;
use crawlkeeper_render::{
    Answer, Loader, Plan, RenderConfig, RenderError, Renderer, Subrequest, Wait, find_chromium,
};
use url::Url;

struct Memory {
    files: HashMap<&'static str, (&'static str, &'static str)>,
    refuse: &'static [&'static str],
    asked: Mutex<Vec<(String, String)>>,
}

impl Memory {
    fn new(files: &[(&'static str, &'static str, &'static str)]) -> Self {
        Self {
            files: files.iter().map(|(p, t, b)| (*p, (*t, *b))).collect(),
            refuse: &[],
            asked: Mutex::new(Vec::new()),
        }
    }
    fn asked(&self) -> Vec<(String, String)> {
        self.asked.lock().unwrap().clone()
    }
}

fn response(content_type: &str, body: &'static str) -> FetchResponse {
    let mut headers = http::HeaderMap::new();
    headers.insert(http::header::CONTENT_TYPE, content_type.parse().unwrap());
    FetchResponse {
        started_at: SystemTime::now(),
        elapsed: Duration::ZERO,
        status: 200,
        headers,
        body: bytes::Bytes::from_static(body.as_bytes()),
        truncated: false,
        capture: None,
    }
}

#[async_trait]
impl Loader for Memory {
    async fn load(&self, r: &Subrequest) -> Answer {
        self.asked
            .lock()
            .unwrap()
            .push((r.url.path().to_owned(), r.resource_type.clone()));
        if self.refuse.contains(&r.url.path()) {
            return Answer::Refused("refused by the test".into());
        }
        match self.files.get(r.url.path()) {
            Some((t, b)) => Answer::Response(Box::new(response(t, b))),
            None => Answer::Failed("not in memory".into()),
        }
    }
}

async fn renderer(wait: Wait, timeout: Duration) -> (Renderer, Plan) {
    let mut config = RenderConfig::new(find_chromium(None).expect("Debian's chromium"));
    config.js_heap_mb = 64;
    let r = Renderer::start(config).await.expect("chromium starts");
    (r, Plan { wait, timeout })
}

fn page() -> Url {
    Url::parse("http://site.test/page").unwrap()
}

const SHELL: &str = "<html><head><title>Shell</title><script src=\"/app.js\"></script></head>\
                     <body><div id=\"app\"></div><img src=\"/no.png\"></body></html>";
const APP: &str = "addEventListener('DOMContentLoaded', () => fetch('/data.json').then(r => r.json()).then(d => {\
     document.getElementById('app').innerHTML = '<h1 id=\"h\">' + d.h + '</h1><a href=\"/next\">next</a>';\
   }).catch(e => { document.getElementById('app').textContent = 'failed ' + e; }));";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_built_page_is_read_after_its_fetch_and_every_request_goes_through_the_loader() {
    let (r, plan) = renderer(Wait::NetworkIdle, Duration::from_secs(20)).await;
    let mut memory = Memory::new(&[
        ("/app.js", "application/javascript", APP),
        (
            "/data.json",
            "application/json",
            "{\"h\":\"Built by script\"}",
        ),
    ]);
    memory.refuse = &["/no.png"];
    let rendered = r
        .render(&page(), &response("text/html", SHELL), &memory, &plan)
        .await
        .unwrap();
    assert!(
        rendered.html.contains("<h1 id=\"h\">Built by script</h1>"),
        "{}",
        rendered.html
    );
    assert!(rendered.html.contains("href=\"/next\""));
    let asked = memory.asked();
    let paths: Vec<&str> = asked.iter().map(|(p, _)| p.as_str()).collect();
    for p in ["/app.js", "/data.json", "/no.png"] {
        assert!(paths.contains(&p), "{p} asked of the loader: {asked:?}");
    }
    assert!(
        !paths.contains(&"/page"),
        "the page itself is not fetched again"
    );
    assert!(rendered.refused >= 1, "{rendered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_loads_times_out_and_the_next_page_renders() {
    let (r, plan) = renderer(Wait::Load, Duration::from_secs(3)).await;
    let memory = Memory::new(&[]);
    let hang = "<html><body><a href=/x>x</a><script>while (true) {}</script></body></html>";
    let started = std::time::Instant::now();
    let e = r
        .render(&page(), &response("text/html", hang), &memory, &plan)
        .await
        .unwrap_err();
    assert!(matches!(e, RenderError::Timeout(_)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "bounded");
    let ok = r
        .render(
            &page(),
            &response("text/html", "<p id=ok>fine</p>"),
            &memory,
            &plan,
        )
        .await
        .unwrap();
    assert!(ok.html.contains("fine"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_exhausts_its_memory_crashes_its_tab_only() {
    let (r, plan) = renderer(Wait::Load, Duration::from_secs(20)).await;
    let memory = Memory::new(&[]);
    let crash = "<html><body><script>const a = []; \
                 while (true) { a.push(new Array(1 << 20).fill(Math.random())); }</script></body></html>";
    let e = r
        .render(&page(), &response("text/html", crash), &memory, &plan)
        .await
        .unwrap_err();
    assert!(matches!(e, RenderError::Crashed), "{e:?}");
    let ok = r
        .render(
            &page(),
            &response("text/html", "<p>after</p>"),
            &memory,
            &plan,
        )
        .await
        .unwrap();
    assert!(ok.html.contains("after"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_wait_waits_for_the_element() {
    let (r, plan) = renderer(Wait::Selector("#late".into()), Duration::from_secs(10)).await;
    let memory = Memory::new(&[]);
    let late = "<html><body><script>setTimeout(() => { const d = document.createElement('div'); \
                d.id = 'late'; d.textContent = 'arrived'; document.body.appendChild(d); }, 400);</script></body></html>";
    let rendered = r
        .render(&page(), &response("text/html", late), &memory, &plan)
        .await
        .unwrap();
    assert!(rendered.html.contains("arrived"), "{}", rendered.html);
    assert!(!rendered.wait_unmet);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_busy_for_ever_after_its_load_times_out_and_the_browser_renders_on() {
    let (r, plan) = renderer(Wait::Selector("#never".into()), Duration::from_secs(3)).await;
    let memory = Memory::new(&[]);
    let busy = "<html><body><script>addEventListener('load', () => \
                setTimeout(() => { while (true) {} }, 0));</script></body></html>";
    let e = r
        .render(&page(), &response("text/html", busy), &memory, &plan)
        .await
        .unwrap_err();
    assert!(matches!(e, RenderError::Timeout(_)), "{e:?}");
    let plan = Plan {
        wait: Wait::Load,
        ..plan
    };
    let ok = r
        .render(
            &page(),
            &response("text/html", "<p>next</p>"),
            &memory,
            &plan,
        )
        .await
        .unwrap();
    assert!(ok.html.contains("next"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_kept_for_the_next_page_brings_nothing_of_the_last_one() {
    let (r, plan) = renderer(Wait::Load, Duration::from_secs(10)).await;
    let memory = Memory::new(&[("/b.json", "application/json", "{}")]);
    // Its fetch comes just after the load event, when the page is done.
    let a = "<html><body><script>addEventListener('load', () => \
             setTimeout(() => fetch('/late-a'), 0));</script></body></html>";
    let b = "<html><body><script>fetch('/b.json');</script><p>b</p></body></html>";
    r.render(&page(), &response("text/html", a), &memory, &plan)
        .await
        .unwrap();
    memory.asked.lock().unwrap().clear();
    let plan_b = Plan {
        wait: Wait::NetworkIdle,
        ..plan
    };
    let rendered = r
        .render(&page(), &response("text/html", b), &memory, &plan_b)
        .await
        .unwrap();
    assert!(rendered.html.contains("<p>b</p>"));
    let asked: Vec<String> = memory.asked().into_iter().map(|(p, _)| p).collect();
    assert!(asked.contains(&"/b.json".to_owned()), "{asked:?}");
    assert!(
        !asked.contains(&"/late-a".to_owned()),
        "the last page's fetch: {asked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_one_after_another_in_a_kept_tab_each_read_its_own_dom() {
    let (r, plan) = renderer(Wait::Load, Duration::from_secs(10)).await;
    let memory = Memory::new(&[("/style.css", "text/css", "p { color: red }")]);
    for i in 0..20 {
        let html: &'static str = Box::leak(
            format!(
                "<html><head><link rel=stylesheet href=/style.css></head>\
                 <body><p id=m>page-{i}</p><script>document.body.dataset.n = '{i}';</script></body></html>"
            )
            .into_boxed_str(),
        );
        let rendered = r
            .render(&page(), &response("text/html", html), &memory, &plan)
            .await
            .unwrap();
        assert!(
            rendered.html.contains(&format!("page-{i}"))
                && rendered.html.contains(&format!("data-n=\"{i}\"")),
            "page {i} read: {}",
            rendered.html
        );
    }
}

/// Counts the loads it answers at once; each takes a moment.
struct Slow {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    done: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl Loader for Slow {
    async fn load(&self, _: &Subrequest) -> Answer {
        use std::sync::atomic::Ordering::SeqCst;
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(n, SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.now.fetch_sub(1, SeqCst);
        self.done.fetch_add(1, SeqCst);
        Answer::Response(Box::new(response("image/png", "")))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_asking_for_many_things_at_once_is_answered_a_few_at_a_time() {
    let (r, plan) = renderer(Wait::Load, Duration::from_secs(20)).await;
    let images: String = (0..60)
        .map(|i| format!("<img src=http://h{i}.test/i.png>"))
        .collect();
    let html: &'static str =
        Box::leak(format!("<html><body>{images}</body></html>").into_boxed_str());
    let slow = Slow {
        now: Default::default(),
        most: Default::default(),
        done: Default::default(),
    };
    r.render(&page(), &response("text/html", html), &slow, &plan)
        .await
        .unwrap();
    use std::sync::atomic::Ordering::SeqCst;
    assert!(slow.done.load(SeqCst) >= 60, "every image answered");
    let most = slow.most.load(SeqCst);
    assert!((2..=16).contains(&most), "{most} at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_is_dismissed_and_a_worker_that_ends_is_no_crash() {
    let (r, plan) = renderer(Wait::NetworkIdle, Duration::from_secs(10)).await;
    let memory = Memory::new(&[("/w.js", "application/javascript", "postMessage(1);")]);
    let page_html = "<html><body><script>alert('hello'); const w = new Worker('/w.js'); \
                     setTimeout(() => w.terminate(), 50); \
                     setTimeout(() => document.body.append('after'), 300);</script></body></html>";
    let rendered = r
        .render(&page(), &response("text/html", page_html), &memory, &plan)
        .await
        .unwrap();
    assert!(rendered.html.contains("after"), "{}", rendered.html);
    assert!(!rendered.wait_unmet);
}
