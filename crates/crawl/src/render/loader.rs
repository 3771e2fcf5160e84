//! The answers to a rendered page's requests, given by the crawl: only
//! `http(s)` URLs of an allowed length, a frame's navigation only in
//! scope, every URL only if its authority's robots.txt allows it, then
//! fetched by the crawl's own fetcher (the SSRF guard, politeness per host
//! and IP, body and time limits, proxies, headers and cookies all apply
//! there). With a WARC output, each exchange is archived with the page
//! that made it; what pages share is fetched once ([`super::cache`]).

use std::sync::Mutex;

use async_trait::async_trait;
use crawlkeeper_fetch::FetchResponse;
use crawlkeeper_model::{Authority, ErrorKind};
use crawlkeeper_render::{Answer, Loader, Subrequest};

use crate::pipeline::{Pipeline, Request};
use crate::robots::RobotsRules;
use crate::scope::{Candidate, Verdict};

/// Answers one page's requests.
pub(crate) struct PageLoader<'a> {
    pipeline: &'a Pipeline,
    page: &'a Request,
    /// The page's authority and its rules (the engine's copy).
    authority: Option<Authority>,
    robots: &'a RobotsRules,
    /// The WARC records of what was fetched, when the crawl archives.
    archived: Mutex<Vec<u8>>,
}

impl<'a> PageLoader<'a> {
    pub(crate) fn new(pipeline: &'a Pipeline, page: &'a Request, robots: &'a RobotsRules) -> Self {
        Self {
            pipeline,
            page,
            authority: Authority::of(&page.url).ok(),
            robots,
            archived: Mutex::new(Vec::new()),
        }
    }

    /// The WARC records of every exchange, in the order they ended.
    pub(crate) fn into_archive(self) -> Vec<u8> {
        self.archived
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Why `r` may not be fetched, if it may not.
    async fn refusal(&self, r: &Subrequest) -> Option<String> {
        let url = &r.url;
        if !matches!(url.scheme(), "http" | "https") {
            return Some(format!("{} URLs are not fetched", url.scheme()));
        }
        if url.as_str().len() > self.pipeline.max_url_length {
            return Some("the URL is too long".into());
        }
        if r.navigation {
            let candidate = Candidate {
                url,
                depth: self.page.depth + 1,
            };
            if self.pipeline.scope.check(&candidate) != Verdict::Accept {
                return Some("a frame out of the crawl's scope".into());
            }
        }
        let Ok(authority) = Authority::of(url) else {
            return Some("no authority".into());
        };
        let checked = if self.authority.as_ref() == Some(&authority) {
            self.robots.check(url)
        } else {
            let render = self.pipeline.render.as_ref()?;
            let archiver = self.pipeline.archiver.as_deref();
            let rules = render
                .robots
                .rules(
                    self.pipeline.fetcher(),
                    &authority,
                    archiver,
                    &self.archived,
                )
                .await;
            rules.check(url)
        };
        checked.err().map(|e| e.message)
    }
}

#[async_trait]
impl Loader for PageLoader<'_> {
    async fn load(&self, r: &Subrequest) -> Answer {
        if let Some(why) = self.refusal(r).await {
            return Answer::Refused(why);
        }
        // Archived by the page that fetched it.
        let fetch = async {
            let response = self.pipeline.fetcher().fetch(&r.url).await?;
            if let Some(archiver) = &self.pipeline.archiver {
                let records = archiver.exchange(r.url.as_str(), &response);
                self.archived
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .extend(records);
            }
            Ok::<_, crawlkeeper_fetch::FetchError>(response)
        };
        let fetched = match self.pipeline.render.as_ref() {
            Some(render) if super::cache::shareable(&r.resource_type) => render
                .shared
                .get(r.url.as_str(), fetch)
                .await
                .map(|shared| FetchResponse::clone(&shared)),
            _ => fetch.await,
        };
        match fetched {
            Ok(response) => Answer::Response(Box::new(response)),
            Err(e) if e.kind == ErrorKind::BlockedAddress => Answer::Refused(e.message),
            Err(e) => Answer::Failed(e.message),
        }
    }
}
