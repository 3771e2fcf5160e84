//! One page rendered in one tab: a browser context of its own (no cookie
//! or storage of another page), every request paused and answered, the
//! wait, the DOM read, the tab closed.
//!
//! Every request of the tab and of whatever it starts (frames in other
//! processes, workers: attached automatically and held until their own
//! requests are paused too) reaches [`Tab::render`]'s loop as a
//! `Fetch.requestPaused` event and is answered from it: the page's own
//! navigation with the response the crawler already fetched (the page is
//! not fetched twice), any later navigation of the page away refused,
//! every other request by the crawl's [`Loader`]. Nothing is let through
//! to the network (`Fetch.continueRequest` is never sent).

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use crawlkeeper_model::FetchResponse;
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use url::Url;

use crate::cdp::{Connection, Event};
use crate::{
    Answer, Loader, MAX_DOM_CHARS, NETWORK_IDLE, Plan, RenderError, Rendered, Subrequest, Wait,
};

/// How long the browser has to answer a command about a tab.
const COMMAND_WITHIN: Duration = Duration::from_secs(10);
/// How long the DOM read may take once the wait is met (or timed out).
const READ_WITHIN: Duration = Duration::from_secs(5);
/// The largest body handed to the browser (base64 in one message).
const MAX_FULFILL: usize = 32 << 20;
/// Requests of one page answered at once.
const LOADS_AT_ONCE: usize = 16;
/// How often the wait's condition is checked.
const TICK: Duration = Duration::from_millis(100);

/// Reads the page's DOM, or `null` when it is over the limit.
fn dom_expression() -> String {
    format!(
        "(() => {{ const d = document.documentElement; if (!d) return ''; \
         const h = d.outerHTML; return h.length > {MAX_DOM_CHARS} ? null : h; }})()"
    )
}

/// Pages one tab renders before it is closed and another opened.
pub(crate) const TAB_PAGES: u32 = 50;

/// A tab, open and attached.
pub(crate) struct Tab {
    /// Pages it rendered.
    pub(crate) pages: u32,
    conn: Arc<Connection>,
    context: String,
    target: String,
    session: String,
    /// Sessions of what the tab started (frames, workers).
    children: Vec<String>,
    events: mpsc::UnboundedReceiver<Event>,
    to_self: mpsc::UnboundedSender<Event>,
}

/// A command the loop sends beside the page's answers (a child's
/// start, a dialog's dismissal), its result ignored.
type Setup = std::pin::Pin<Box<dyn Future<Output = Result<(), RenderError>> + Send>>;

/// What a page's requests are answered with: its own response, the
/// crawl's loader for the others, at most so many of them.
#[derive(Clone, Copy)]
struct Answering<'a> {
    served: &'a FetchResponse,
    loader: &'a dyn Loader,
    max_requests: u32,
}

/// What an event asks of the render's loop.
enum Next<F> {
    /// Send this answer to a paused request.
    Answer(F),
    /// Let this frame or worker run once its requests are paused.
    Child(String),
    /// Dismiss the page's JavaScript dialog.
    Dismiss,
    /// Nothing.
    Nothing,
}

/// What is done with a paused request.
enum Then {
    /// It is the page's own navigation: handed the response fetched.
    Serve,
    /// Failed, for this reason.
    Refuse(String),
    /// Asked of the crawl's loader.
    Load(Box<Subrequest>),
}

/// What the loop knows of the page so far.
#[derive(Default)]
struct Progress {
    main_served: bool,
    loaded: bool,
    /// The navigation's loader (from its answer), and the loaders of the
    /// main frame whose load event was seen: a kept tab may still tell
    /// the load of its blank page, which is not this page's.
    loader: Option<String>,
    loads: Vec<String>,
    found: bool,
    in_flight: usize,
    idle_since: Option<Instant>,
    requests: u32,
    refused: u32,
}

impl Progress {
    /// Takes in a lifecycle event of the tab: the load of a main-frame
    /// document (this page's once its loader is known).
    fn lifecycle(&mut self, target: &str, v: &Value) {
        let of_page = v.get("frameId").and_then(Value::as_str) == Some(target);
        if of_page
            && v.get("name").and_then(Value::as_str) == Some("load")
            && let Some(l) = v.get("loaderId").and_then(Value::as_str)
            && self.loads.len() < 64
        {
            self.loads.push(l.to_owned());
            self.loaded = self.loader.as_deref() == Some(l);
        }
    }

    /// Takes in the navigation's answer: its loader, or its failure.
    fn navigated(&mut self, v: &Value) -> Result<(), RenderError> {
        if let Some(e) = v
            .get("errorText")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty())
        {
            return Err(RenderError::Protocol(format!("the navigation failed: {e}")));
        }
        self.loader = v.get("loaderId").and_then(Value::as_str).map(str::to_owned);
        self.loaded = self.loader.as_ref().is_some_and(|l| self.loads.contains(l));
        Ok(())
    }
}

impl Tab {
    /// A new tab in a browser context of its own, every request of it
    /// paused from the start.
    pub(crate) async fn open(conn: Arc<Connection>) -> Result<Self, RenderError> {
        let browser = |m: &'static str, p: Value| {
            let conn = conn.clone();
            async move { conn.call(None, m, p, COMMAND_WITHIN).await }
        };
        let context = browser(
            "Target.createBrowserContext",
            json!({ "disposeOnDetach": true }),
        )
        .await?;
        let context = string(&context, "browserContextId")?;
        let target = browser(
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context }),
        )
        .await?;
        let target = string(&target, "targetId")?;
        let attached = browser(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        )
        .await?;
        let session = string(&attached, "sessionId")?;
        let (to_self, events) = mpsc::unbounded_channel();
        conn.route(&session, to_self.clone());
        let tab = Self {
            pages: 0,
            conn,
            context,
            target,
            session,
            children: Vec::new(),
            events,
            to_self,
        };
        prepare(&tab.conn, &tab.session).await?;
        tab.call("Page.enable", json!({})).await?;
        tab.call("Page.setLifecycleEventsEnabled", json!({ "enabled": true }))
            .await?;
        Ok(tab)
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, RenderError> {
        self.conn
            .call(Some(&self.session), method, params, COMMAND_WITHIN)
            .await
    }

    /// Makes the tab blank for the next page: the last page's document
    /// and whatever it still had in flight are gone (its paused requests
    /// cancelled by the navigation, their events read and dropped).
    pub(crate) async fn blank(&mut self) -> Result<(), RenderError> {
        let v = self
            .call("Page.navigate", json!({ "url": "about:blank" }))
            .await?;
        if v.get("errorText")
            .and_then(Value::as_str)
            .is_some_and(|e| !e.is_empty())
        {
            return Err(RenderError::Protocol("the tab could not be blanked".into()));
        }
        for child in self.children.drain(..) {
            self.conn.unroute(&child);
        }
        while self.events.try_recv().is_ok() {}
        Ok(())
    }

    /// Closes the tab and its context; an error means the browser did not
    /// answer (it is then replaced).
    pub(crate) async fn close(self) -> Result<(), RenderError> {
        for child in &self.children {
            self.conn.unroute(child);
        }
        self.conn.unroute(&self.session);
        self.conn
            .call(
                None,
                "Target.closeTarget",
                json!({ "targetId": self.target }),
                COMMAND_WITHIN,
            )
            .await?;
        self.conn
            .call(
                None,
                "Target.disposeBrowserContext",
                json!({ "browserContextId": self.context }),
                COMMAND_WITHIN,
            )
            .await
            // Disposed already with the tab (`disposeOnDetach`).
            .or_else(|e| match e {
                RenderError::Protocol(_) => Ok(Value::Null),
                e => Err(e),
            })?;
        Ok(())
    }

    /// Renders `page`, whose response `served` the crawler fetched,
    /// answering its other requests (at most `max_requests`) with
    /// `loader`, as `config` says.
    pub(crate) async fn render(
        &mut self,
        page: &Url,
        served: &FetchResponse,
        loader: &dyn Loader,
        config: &Plan,
        max_requests: u32,
    ) -> Result<Rendered, RenderError> {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + config.timeout;
        let with = Answering {
            served,
            loader,
            max_requests,
        };
        let conn = self.conn.clone();
        let session = self.session.clone();
        // Answered once the page's own response is handed over; allowed
        // longer than the page's deadline, which is told first.
        let navigate = conn.call(
            Some(&session),
            "Page.navigate",
            json!({ "url": page.as_str() }),
            config.timeout + COMMAND_WITHIN,
        );
        tokio::pin!(navigate);
        let mut navigated = false;
        let mut answers = FuturesUnordered::new();
        // Requests past the ones being answered wait their turn: what a
        // page's loads hold at once (bodies, their base64) stays bounded.
        let mut queued = std::collections::VecDeque::new();
        let mut setups: FuturesUnordered<Setup> = FuturesUnordered::new();
        // What a kept tab still told of its last page since it was blanked.
        while self.events.try_recv().is_ok() {}
        let mut probes = FuturesUnordered::new();
        let mut tick = tokio::time::interval(TICK);
        let mut p = Progress {
            idle_since: Some(Instant::now()),
            ..Progress::default()
        };
        loop {
            if navigated && p.loaded && self.met(&config.wait, &p) {
                break;
            }
            tokio::select! {
                event = self.events.recv() => {
                    let Some(event) = event else {
                        return Err(RenderError::BrowserGone);
                    };
                    match self.on_event(event, with, &mut p)? {
                        Next::Answer(answer) => {
                            if answers.len() < LOADS_AT_ONCE {
                                answers.push(answer);
                            } else {
                                queued.push_back(answer);
                            }
                            p.in_flight += 1;
                            p.idle_since = None;
                        }
                        Next::Child(child) => {
                            let conn = conn.clone();
                            setups.push(Box::pin(async move { start_child(&conn, &child).await }));
                        }
                        Next::Dismiss => {
                            let (conn, session) = (conn.clone(), session.clone());
                            setups.push(Box::pin(async move {
                                conn.call(Some(&session), "Page.handleJavaScriptDialog",
                                    json!({ "accept": false }), COMMAND_WITHIN).await.map(|_| ())
                            }));
                        }
                        Next::Nothing => {}
                    }
                }
                r = &mut navigate, if !navigated => {
                    navigated = true;
                    p.navigated(&r?)?;
                }
                Some(refused) = answers.next(), if !answers.is_empty() => {
                    if let Some(next) = queued.pop_front() {
                        answers.push(next);
                    }
                    p.refused += u32::from(refused);
                    p.in_flight = p.in_flight.saturating_sub(1);
                    if p.in_flight == 0 {
                        p.idle_since = Some(Instant::now());
                    }
                }
                Some(_) = setups.next(), if !setups.is_empty() => {}
                Some(found) = probes.next(), if !probes.is_empty() => p.found = found,
                _ = tick.tick() => {
                    // The tab's own sender keeps its stream open: a dead
                    // browser is seen here.
                    if conn.is_closed() {
                        return Err(RenderError::BrowserGone);
                    }
                    if let Wait::Selector(selector) = &config.wait
                        && p.loaded
                        && probes.is_empty()
                    {
                        probes.push(probe(conn.clone(), session.clone(), selector));
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    if !p.loaded {
                        return Err(RenderError::Timeout(config.timeout));
                    }
                    let html = self.read_dom(config).await?;
                    return Ok(rendered(html, &p, started, true));
                }
            }
        }
        let html = self.read_dom(config).await?;
        Ok(rendered(html, &p, started, false))
    }

    /// Takes in one event of the tab (or of what it started).
    fn on_event<'a>(
        &mut self,
        event: Event,
        with: Answering<'a>,
        p: &mut Progress,
    ) -> Result<Next<impl Future<Output = bool> + use<'a>>, RenderError> {
        let own = event.session == self.session;
        match event.method.as_str() {
            "Fetch.requestPaused" => {
                let answer = self.paused(event, with, p);
                return Ok(Next::Answer(answer));
            }
            "Page.lifecycleEvent" if own => p.lifecycle(&self.target, &event.params),
            "Inspector.targetCrashed" if own => return Err(RenderError::Crashed),
            // A frame or worker that ends is told on the tab's session too:
            // only the tab's own detach ends the page.
            "Target.detachedFromTarget" => {
                let gone = event.params.get("sessionId").and_then(Value::as_str);
                if gone == Some(self.session.as_str()) {
                    return Err(RenderError::Crashed);
                }
                if let Some(gone) = gone {
                    self.conn.unroute(gone);
                    self.children.retain(|c| c != gone);
                }
            }
            // A dialog would hold the page until answered: dismissed.
            "Page.javascriptDialogOpening" if own => return Ok(Next::Dismiss),
            "Target.attachedToTarget" => {
                if let Some(child) = self.adopt(&event) {
                    return Ok(Next::Child(child));
                }
            }
            _ => {}
        }
        Ok(Next::Nothing)
    }

    /// True when `wait` is met, the page having loaded.
    fn met(&self, wait: &Wait, p: &Progress) -> bool {
        match wait {
            Wait::Load => true,
            Wait::NetworkIdle => {
                p.in_flight == 0 && p.idle_since.is_some_and(|t| t.elapsed() >= NETWORK_IDLE)
            }
            Wait::Selector(_) => p.found,
        }
    }

    /// The answer to one paused request, as a future that sends it and
    /// tells whether the request was refused.
    fn paused<'a>(
        &mut self,
        event: Event,
        with: Answering<'a>,
        p: &mut Progress,
    ) -> impl Future<Output = bool> + use<'a> {
        let Answering {
            served,
            loader,
            max_requests,
        } = with;
        let conn = self.conn.clone();
        let session = event.session;
        let params = event.params;
        let id = params
            .get("requestId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let then = self.decide(&params, max_requests, p);
        async move {
            let answer = match then {
                Then::Serve => fulfill(served),
                Then::Refuse(why) => Err(why),
                Then::Load(sub) if sub.method != "GET" => {
                    Err(format!("{} requests are not made", sub.method))
                }
                Then::Load(sub) => match loader.load(&sub).await {
                    Answer::Response(r) => fulfill(&r),
                    Answer::Refused(why) => Err(why),
                    Answer::Failed(why) => {
                        tracing::debug!(url = %sub.url, why, "a page's request failed");
                        let params = json!({ "requestId": id, "errorReason": "Failed" });
                        let _ = conn
                            .call(Some(&session), "Fetch.failRequest", params, COMMAND_WITHIN)
                            .await;
                        return false;
                    }
                },
            };
            let refused = answer.is_err();
            let (method, params) = match answer {
                Ok(mut params) => {
                    params["requestId"] = Value::String(id);
                    ("Fetch.fulfillRequest", params)
                }
                Err(why) => {
                    tracing::debug!(why, "a page's request refused");
                    let params = json!({ "requestId": id, "errorReason": "BlockedByClient" });
                    ("Fetch.failRequest", params)
                }
            };
            // The page may be gone by now: nothing to do about an error.
            let _ = conn
                .call(Some(&session), method, params, COMMAND_WITHIN)
                .await;
            refused
        }
    }

    /// What to do with the paused request `params` describes: the page's
    /// own navigation is served (once), a later one of the main frame and
    /// one past `max_requests` refused, any other asked of the loader.
    fn decide(&self, params: &Value, max_requests: u32, p: &mut Progress) -> Then {
        let request = params.get("request").unwrap_or(&Value::Null);
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        let url = text(request, "url").unwrap_or_default();
        let resource_type = text(params, "resourceType").unwrap_or_else(|| "Other".into());
        let navigation = resource_type == "Document";
        let main_frame = navigation && text(params, "frameId").as_deref() == Some(&self.target);
        tracing::trace!(url, resource_type, "request paused");
        if main_frame && !p.main_served {
            p.main_served = true;
            return Then::Serve;
        }
        if main_frame {
            return Then::Refuse(format!("the page navigated away to {url}"));
        }
        // Before the page's own navigation, a request is a last page's.
        if !p.main_served {
            return Then::Refuse(format!("{url} is not of this page"));
        }
        if p.requests >= max_requests {
            return Then::Refuse(format!("more than {max_requests} requests"));
        }
        match Url::parse(&url) {
            Ok(mut url) => {
                p.requests += 1;
                url.set_fragment(None);
                Then::Load(Box::new(Subrequest {
                    url,
                    method: text(request, "method").unwrap_or_else(|| "GET".into()),
                    resource_type,
                    navigation,
                }))
            }
            Err(e) => Then::Refuse(format!("unusable URL: {e}")),
        }
    }

    /// Takes in a frame or worker the tab started: its events come here;
    /// the session's id, to hold its requests before it runs.
    fn adopt(&mut self, event: &Event) -> Option<String> {
        let info = event.params.get("sessionInfo")?;
        let child = info.get("sessionId")?.as_str()?.to_owned();
        self.conn.route(&child, self.to_self.clone());
        self.children.push(child.clone());
        Some(child)
    }

    /// The page's DOM as HTML. A page whose scripts keep its renderer
    /// too busy to answer has timed out (its fault, not the browser's).
    async fn read_dom(&self, config: &Plan) -> Result<String, RenderError> {
        let v = self
            .conn
            .call(
                Some(&self.session),
                "Runtime.evaluate",
                json!({ "expression": dom_expression(), "returnByValue": true }),
                READ_WITHIN,
            )
            .await
            .map_err(|e| match e {
                RenderError::Unresponsive(_) => RenderError::Timeout(config.timeout),
                e => e,
            })?;
        if let Some(e) = v.get("exceptionDetails") {
            let text = e
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("an exception");
            return Err(RenderError::Protocol(format!("reading the DOM: {text}")));
        }
        match v.get("result").and_then(|r| r.get("value")) {
            Some(Value::String(html)) => Ok(html.clone()),
            Some(Value::Null) => Err(RenderError::TooLarge),
            _ => Err(RenderError::Protocol("reading the DOM: no value".into())),
        }
    }
}

fn rendered(html: String, p: &Progress, started: Instant, wait_unmet: bool) -> Rendered {
    Rendered {
        html,
        requests: p.requests,
        refused: p.refused,
        elapsed: started.elapsed(),
        wait_unmet,
    }
}

/// Pauses every request of `session` and has it attach (held) whatever it
/// starts.
async fn prepare(conn: &Connection, session: &str) -> Result<(), RenderError> {
    let call = |m: &'static str, p: Value| conn.call(Some(session), m, p, COMMAND_WITHIN);
    call(
        "Fetch.enable",
        json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
    )
    .await?;
    call(
        "Target.setAutoAttach",
        json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
    )
    .await?;
    Ok(())
}

/// Lets a frame or worker run once its requests are paused.
async fn start_child(conn: &Connection, child: &str) -> Result<(), RenderError> {
    prepare(conn, child).await?;
    conn.call(
        Some(child),
        "Runtime.runIfWaitingForDebugger",
        json!({}),
        COMMAND_WITHIN,
    )
    .await?;
    Ok(())
}

/// Whether an element matches `selector` in the page now.
fn probe(
    conn: Arc<Connection>,
    session: String,
    selector: &str,
) -> impl Future<Output = bool> + use<> {
    let expression = format!(
        "document.querySelector({}) !== null",
        Value::String(selector.to_owned())
    );
    async move {
        let v = conn
            .call(
                Some(&session),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
                COMMAND_WITHIN,
            )
            .await;
        v.ok()
            .and_then(|v| v.get("result")?.get("value")?.as_bool())
            .unwrap_or(false)
    }
}

/// The `Fetch.fulfillRequest` parameters (but the request's id) that hand
/// `r` to the browser, or why it cannot be.
fn fulfill(r: &FetchResponse) -> Result<Value, String> {
    if r.body.len() > MAX_FULFILL {
        return Err(format!("a body over {MAX_FULFILL} bytes"));
    }
    if !(200..=599).contains(&r.status) {
        return Err(format!("status {}", r.status));
    }
    let headers: Vec<Value> = r
        .headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
        .filter_map(|(name, value)| {
            let value = value.to_str().ok()?;
            Some(json!({ "name": name.as_str(), "value": value }))
        })
        .collect();
    Ok(json!({
        "responseCode": r.status,
        "responseHeaders": headers,
        "body": base64::engine::general_purpose::STANDARD.encode(&r.body),
    }))
}

/// Headers that describe the bytes as they went over the wire: the body
/// handed over is decoded and whole.
const HOP_BY_HOP: [&str; 7] = [
    "content-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "trailer",
    "upgrade",
];

fn string(v: &Value, key: &str) -> Result<String, RenderError> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RenderError::Protocol(format!("no {key} in the browser's answer")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, headers: &[(&str, &str)], body: &'static [u8]) -> FetchResponse {
        let mut map = http::HeaderMap::new();
        for (k, v) in headers {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(v.as_bytes()).unwrap(),
            );
        }
        FetchResponse {
            started_at: std::time::SystemTime::now(),
            elapsed: Duration::ZERO,
            status,
            headers: map,
            body: bytes::Bytes::from_static(body),
            truncated: false,
            capture: None,
        }
    }

    #[test]
    fn a_response_is_handed_over_decoded_without_its_wire_headers() {
        let r = response(
            200,
            &[
                ("content-type", "text/html"),
                ("content-encoding", "gzip"),
                ("content-length", "999"),
                ("set-cookie", "a=1"),
                ("set-cookie", "b=2"),
            ],
            b"<p>hi</p>",
        );
        let v = fulfill(&r).unwrap();
        assert_eq!(v["responseCode"], 200);
        assert_eq!(v["body"], "PHA+aGk8L3A+");
        let names: Vec<&str> = v["responseHeaders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["content-type", "set-cookie", "set-cookie"]);
    }

    #[test]
    fn a_redirect_is_handed_over_with_its_location() {
        let r = response(302, &[("location", "/there")], b"");
        let v = fulfill(&r).unwrap();
        assert_eq!(v["responseCode"], 302);
        assert_eq!(v["responseHeaders"][0]["value"], "/there");
    }

    #[test]
    fn a_status_the_browser_cannot_take_is_refused() {
        assert!(fulfill(&response(101, &[], b"")).is_err());
        assert!(fulfill(&response(600, &[], b"")).is_err());
    }

    #[test]
    fn the_dom_expression_caps_what_comes_back() {
        assert!(dom_expression().contains(&MAX_DOM_CHARS.to_string()));
    }
}
