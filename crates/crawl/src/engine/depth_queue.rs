//! One authority's queue of URLs, shallowest first, in arrival order within
//! a depth: a breadth-first order that keeps depth limits exact even when
//! responses arrive out of order.

use std::collections::VecDeque;

use crate::pipeline::Request;

/// A queued request with its dedup key.
#[derive(Debug)]
pub struct Queued {
    /// The dedup key of the request's URL.
    pub key: u128,
    /// The request.
    pub request: Request,
}

/// Jobs by depth, popped shallowest first.
#[derive(Debug, Default)]
pub struct DepthQueue {
    levels: Vec<VecDeque<Queued>>,
    shallowest: usize,
    len: usize,
}

impl DepthQueue {
    /// Adds a request at its depth.
    pub fn push(&mut self, key: u128, request: Request) {
        let depth = request.depth as usize;
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, VecDeque::new);
        }
        self.levels[depth].push_back(Queued { key, request });
        self.shallowest = self.shallowest.min(depth);
        self.len += 1;
    }

    /// Removes the shallowest, oldest request.
    pub fn pop(&mut self) -> Option<Queued> {
        while let Some(level) = self.levels.get_mut(self.shallowest) {
            if let Some(q) = level.pop_front() {
                self.len -= 1;
                return Some(q);
            }
            self.shallowest += 1;
        }
        self.shallowest = 0;
        None
    }

    /// Removes every request.
    pub fn drain(&mut self) -> impl Iterator<Item = Queued> + '_ {
        self.len = 0;
        self.shallowest = 0;
        self.levels.iter_mut().flat_map(|l| l.drain(..))
    }

    /// Number of requests.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use url::Url;

    fn request(path: &str, depth: u32) -> Request {
        let mut j = Request::seed(Url::parse(&format!("http://a.test{path}")).unwrap());
        j.depth = depth;
        j
    }

    #[test]
    fn shallowest_first_then_fifo() {
        let mut q = DepthQueue::default();
        q.push(1, request("/d2a", 2));
        q.push(2, request("/d1a", 1));
        q.push(3, request("/d2b", 2));
        q.push(4, request("/d1b", 1));
        let order: Vec<String> = std::iter::from_fn(|| q.pop())
            .map(|q| q.request.url.path().to_owned())
            .collect();
        assert_eq!(order, ["/d1a", "/d1b", "/d2a", "/d2b"]);
        assert!(q.is_empty());
        q.push(5, request("/d3", 3));
        q.push(6, request("/d0", 0));
        assert_eq!(q.pop().unwrap().request.url.path(), "/d0");
        assert_eq!(q.len(), 1);
        assert_eq!(q.drain().count(), 1);
        assert!(q.pop().is_none());
    }
}
