//! The render step of the pipeline: after a page's served HTML was read,
//! render it when the job says so, and read the rendered DOM instead.

use bytes::Bytes;
use crawlkeeper_fetch::FetchResponse;
use crawlkeeper_model::{ErrorKind, RecordError, Rendering};

use super::RenderWhen;
use super::loader::PageLoader;
use crate::pipeline::{Pipeline, Processed, Request, blank_record};
use crate::robots::RobotsRules;

/// What rendering a page gave the rest of the pipeline.
#[derive(Default)]
pub(crate) struct Outcome {
    /// The response with the rendered DOM as its body, for the
    /// processors; `None` when the page was not rendered.
    pub(crate) dom: Option<FetchResponse>,
    /// The WARC records of what the page's requests fetched.
    pub(crate) archived: Vec<u8>,
}

impl Pipeline {
    /// Renders `response` to `request` when the crawl renders and it is a
    /// page to render, replacing what `processed` (read from the served
    /// HTML) holds with what the DOM gives; a render that fails leaves it
    /// as it is, with the error. `nofollow` is the DOM's when rendered.
    pub(crate) async fn render_step(
        &self,
        request: &Request,
        robots: &RobotsRules,
        response: &FetchResponse,
        processed: &mut Processed,
        nofollow: &mut bool,
    ) -> Outcome {
        if self.render.is_none() {
            return Outcome::default();
        }
        // Boxed: a render's state (its tab's loop) would otherwise sit
        // inline in every page's future, copied as it moves (+2 % of
        // instructions a page on a crawl that does not render, by
        // callgrind).
        Box::pin(self.render_page(request, robots, response, processed, nofollow)).await
    }

    /// [`Pipeline::render_step`] of a crawl that renders.
    async fn render_page(
        &self,
        request: &Request,
        robots: &RobotsRules,
        response: &FetchResponse,
        processed: &mut Processed,
        nofollow: &mut bool,
    ) -> Outcome {
        let Some(render) = &self.render else {
            return Outcome::default();
        };
        let page = (200..300).contains(&response.status)
            && response.is_html()
            && request.sitemap_level().is_none()
            && !request.is_requisite();
        if !page
            || (render.when == RenderWhen::Auto
                && !crawlkeeper_render::shell::is_shell(&response.body, processed.record.links))
        {
            return Outcome::default();
        }
        let loader = PageLoader::new(self, request, robots);
        let result = render
            .renderer
            .render(&request.url, response, &loader, &render.plan)
            .await;
        let archived = loader.into_archive();
        let rendered = match result {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(url = %request.url, error = %e, "render failed");
                if processed.record.error.is_none() {
                    let kind = if e.is_timeout() {
                        ErrorKind::RenderTimeout
                    } else {
                        ErrorKind::RenderFailed
                    };
                    processed.record.error = Some(RecordError::new(kind, e.to_string()));
                }
                return Outcome {
                    dom: None,
                    archived,
                };
            }
        };
        let mut dom = response.clone();
        dom.body = Bytes::from(rendered.html);
        dom.capture = None;
        let (mut again, dom_nofollow) = self.interpret(request, blank_record(request), &dom);
        // The record describes the response as served; only what was read
        // from it comes from the DOM.
        again.record.bytes = processed.record.bytes;
        again.observed = std::mem::replace(
            &mut processed.observed,
            crawlkeeper_model::revisit::Observed::Failed,
        );
        again.record.rendered = Some(Rendering {
            ms: u64::try_from(rendered.elapsed.as_millis()).unwrap_or(u64::MAX),
            requests: rendered.requests,
            refused: rendered.refused,
            wait_unmet: rendered.wait_unmet,
        });
        *processed = again;
        *nofollow = dom_nofollow;
        Outcome {
            dom: Some(dom),
            archived,
        }
    }
}
