//! Tantivy's top-k collection, answering to a cancellation token ([`CancelToken`]).
//!
//! A search looked at its token only between its phases, so Tantivy's collection of the
//! candidate pool (every posting of every query term, over every segment) ran to its end for
//! a client that had left. [`Cancellable`] wraps the query handed to `Searcher::search`, not
//! the collector: Tantivy's `TopDocs` drives block-max WAND through the weight's
//! `for_each_pruning`, which a wrapper collector would lose (its default collection walks every
//! matching document). The wrapper's weight delegates everything, so scores, pruning and the
//! hits are exactly Tantivy's; it looks at the token before each segment and, inside one,
//! every [`CHECK_EVERY`] documents handed to the collector. Once tripped it hands the
//! collector no more documents and raises the pruning threshold to `Score::MAX`, so WAND
//! passes over the rest of the segment at once; the caller then reports
//! [`crate::error::Error::Cancelled`] (see [`Cancellable::stopped`]). Untripped, it costs a
//! counter per collected document and one relaxed atomic load per [`CHECK_EVERY`].

use crate::engine::cancel::CancelToken;
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, Score, SegmentReader, Term};

/// Documents handed to the collector between two looks at the token.
pub(crate) const CHECK_EVERY: u32 = 256;

/// A query whose collection stops once `cancel` trips (see the module docs).
#[derive(Debug)]
pub(crate) struct Cancellable {
    inner: Box<dyn Query>,
    cancel: CancelToken,
}

impl Clone for Cancellable {
    fn clone(&self) -> Self {
        Cancellable { inner: self.inner.box_clone(), cancel: self.cancel.clone() }
    }
}

impl Cancellable {
    /// `inner`, collected under `cancel`.
    pub(crate) fn new(inner: Box<dyn Query>, cancel: &CancelToken) -> Cancellable {
        Cancellable { inner, cancel: cancel.clone() }
    }

    /// Whether the collection may have been cut short: the hits it gave are to be dropped.
    pub(crate) fn stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl Query for Cancellable {
    fn weight(&self, enable_scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let inner = self.inner.weight(enable_scoring)?;
        Ok(Box::new(CancellableWeight { inner, cancel: self.cancel.clone() }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.inner.query_terms(visitor);
    }
}

/// The weight of a [`Cancellable`] query: the inner weight's, with looks at the token.
struct CancellableWeight {
    inner: Box<dyn Weight>,
    cancel: CancelToken,
}

impl CancellableWeight {
    /// `callback`, handed no more documents once the token trips (looked at every
    /// [`CHECK_EVERY`] documents); answers `when_stopped` for each document after that.
    fn checked<'c, T>(
        &'c self,
        mut callback: impl FnMut(DocId, Score) -> T + 'c,
        when_stopped: T,
    ) -> impl FnMut(DocId, Score) -> T + 'c
    where
        T: Copy + 'c,
    {
        let (mut seen, mut stopped) = (0u32, false);
        move |doc, score| {
            if stopped {
                return when_stopped;
            }
            seen = seen.wrapping_add(1);
            if seen.is_multiple_of(CHECK_EVERY) && self.cancel.is_cancelled() {
                stopped = true;
                return when_stopped;
            }
            callback(doc, score)
        }
    }
}

impl Weight for CancellableWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.inner.scorer(reader, boost)
    }

    fn scorer_danger(
        &self,
        reader: &SegmentReader,
        target: DocId,
        boost: Score,
    ) -> tantivy::Result<(tantivy::SeekDangerResult, Box<dyn Scorer>)> {
        self.inner.scorer_danger(reader, target, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        self.inner.count(reader)
    }

    fn for_each(&self, reader: &SegmentReader, callback: &mut dyn FnMut(DocId, Score)) -> tantivy::Result<()> {
        if self.cancel.is_cancelled() {
            return Ok(());
        }
        let mut checked = self.checked(callback, ());
        self.inner.for_each(reader, &mut checked)
    }

    fn for_each_no_score(&self, reader: &SegmentReader, callback: &mut dyn FnMut(&[DocId])) -> tantivy::Result<()> {
        if self.cancel.is_cancelled() {
            return Ok(());
        }
        // Blocks of up to 64 documents: one look per block.
        self.inner.for_each_no_score(reader, &mut |docs| {
            if !self.cancel.is_cancelled() {
                callback(docs);
            }
        })
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        if self.cancel.is_cancelled() {
            return Ok(());
        }
        // A threshold nothing beats: WAND skips every block left.
        let mut checked = self.checked(callback, Score::MAX);
        self.inner.for_each_pruning(threshold, reader, &mut checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::{Collector, SegmentCollector, TopDocs};
    use tantivy::query::{BooleanQuery, Occur, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, TEXT};
    use tantivy::{doc, DocAddress, Index, IndexWriter, Searcher};

    /// One segment of `n` documents, each holding `common` and some of `a`..`e`.
    fn index(n: u32) -> (Searcher, tantivy::schema::Field) {
        let mut schema = Schema::builder();
        let body = schema.add_text_field("body", TEXT);
        let index = Index::create_in_ram(schema.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 50_000_000).unwrap();
        for i in 0..n {
            let words: Vec<&str> =
                ["a", "b", "c", "d", "e"].into_iter().filter(|w| i % (w.len() as u32 + i % 7 + 1) == 0).collect();
            let text = format!("common {} {}", words.join(" "), "common ".repeat((i % 5) as usize));
            w.add_document(doc!(body => text)).unwrap();
        }
        w.commit().unwrap();
        let reader = index.reader().unwrap();
        (reader.searcher(), body)
    }

    fn query(body: tantivy::schema::Field) -> Box<dyn Query> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = ["common", "a", "c", "e"]
            .into_iter()
            .map(|t| {
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(body, t), IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        Box::new(BooleanQuery::new(clauses))
    }

    #[test]
    fn untripped_it_collects_exactly_what_tantivy_collects() {
        let (searcher, body) = index(20_000);
        let top = TopDocs::with_limit(1000).order_by_score();
        let plain: Vec<(Score, DocAddress)> = searcher.search(&query(body), &top).unwrap();
        let wrapped = Cancellable::new(query(body), &CancelToken::new());
        let got: Vec<(Score, DocAddress)> = searcher.search(&wrapped, &top).unwrap();
        assert_eq!(plain.len(), 1000);
        assert_eq!(got, plain);
        assert!(!wrapped.stopped());
    }

    /// Hands documents to the weight's pruning loop (as `TopDocs` does), tripping `token` at
    /// the `trip_at`-th and counting them all.
    struct Tripping {
        token: CancelToken,
        trip_at: u32,
    }

    impl Collector for Tripping {
        type Fruit = u32;
        type Child = NoChild;
        fn for_segment(&self, _: u32, _: &SegmentReader) -> tantivy::Result<NoChild> {
            Ok(NoChild)
        }
        fn requires_scoring(&self) -> bool {
            true
        }
        fn merge_fruits(&self, fruits: Vec<u32>) -> tantivy::Result<u32> {
            Ok(fruits.into_iter().sum())
        }
        fn collect_segment(&self, weight: &dyn Weight, _: u32, reader: &SegmentReader) -> tantivy::Result<u32> {
            let mut seen = 0;
            weight.for_each_pruning(Score::MIN, reader, &mut |_, _| {
                seen += 1;
                if seen == self.trip_at {
                    self.token.cancel();
                }
                Score::MIN
            })?;
            Ok(seen)
        }
    }

    struct NoChild;
    impl SegmentCollector for NoChild {
        type Fruit = u32;
        fn collect(&mut self, _: DocId, _: Score) {}
        fn harvest(self) -> u32 {
            0
        }
    }

    #[test]
    fn a_token_tripped_mid_segment_stops_the_collection_within_a_check() {
        let (searcher, body) = index(20_000);
        let free = Tripping { token: CancelToken::new(), trip_at: u32::MAX };
        let all = searcher.search(&query(body), &free).unwrap();
        assert_eq!(all, 20_000, "every document beats a threshold of Score::MIN");

        let token = CancelToken::new();
        let wrapped = Cancellable::new(query(body), &token);
        let seen = searcher.search(&wrapped, &Tripping { token: token.clone(), trip_at: 1000 }).unwrap();
        assert!(wrapped.stopped());
        assert!((1000..1000 + CHECK_EVERY).contains(&seen), "handed {seen} documents after the trip at 1000");
    }

    #[test]
    fn a_token_tripped_before_collects_nothing() {
        let (searcher, body) = index(2_000);
        let token = CancelToken::new();
        token.cancel();
        let wrapped = Cancellable::new(query(body), &token);
        let got = searcher.search(&wrapped, &TopDocs::with_limit(10).order_by_score()).unwrap();
        assert!(got.is_empty() && wrapped.stopped(), "{got:?}");
    }
}
