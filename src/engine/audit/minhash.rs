//! Text fingerprints for the audits: words, the whitespace-blind hash of exact duplicates,
//! MinHash signatures of word 3-shingles, and banded LSH (locality-sensitive hashing) that
//! turns signatures, or random-hyperplane bits of embeddings, into candidate pairs without
//! comparing every chunk with every other.

use std::collections::{HashMap, HashSet};

/// Hash functions per MinHash signature.
pub const SIGNATURE_LEN: usize = 64;
/// LSH bands over a MinHash signature (16 × 4 rows): two chunks whose Jaccard similarity is
/// 0.8 share a band with probability 0.9998, at 0.6 with 0.89, at 0.3 with 0.12.
const MINHASH_BANDS: usize = 16;
const MINHASH_ROWS: usize = SIGNATURE_LEN / MINHASH_BANDS;
/// Words per shingle.
pub const SHINGLE_WORDS: usize = 3;
/// Members of one LSH bucket paired at most (a bucket this full is boilerplate; the rest of
/// it is left out and the answer says it was capped).
pub const MAX_BUCKET: usize = 256;

/// The lowercased words (letters, digits, `_`) of a text.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// A hash of the text with runs of whitespace made one space: the same text re-indented or
/// re-wrapped is an exact duplicate.
pub fn exact_hash(text: &str) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for (i, w) in text.split_whitespace().enumerate() {
        if i > 0 {
            h.update(b" ");
        }
        h.update(w.as_bytes());
    }
    h.digest()
}

fn mix(mut z: u64) -> u64 {
    // splitmix64's finalizer: a good bijective scrambler.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn seeds() -> [u64; SIGNATURE_LEN] {
    let mut s = [0u64; SIGNATURE_LEN];
    for (i, v) in s.iter_mut().enumerate() {
        *v = mix(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1));
    }
    s
}

/// The MinHash signature of a word list's 3-shingles (`None` below three words).
pub fn signature(words: &[String]) -> Option<[u32; SIGNATURE_LEN]> {
    if words.len() < SHINGLE_WORDS {
        return None;
    }
    let seeds = seeds();
    let mut sig = [u32::MAX; SIGNATURE_LEN];
    let mut seen = HashSet::new();
    for w in words.windows(SHINGLE_WORDS) {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for part in w {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        let x = h.digest();
        if !seen.insert(x) {
            continue;
        }
        for (slot, seed) in sig.iter_mut().zip(seeds.iter()) {
            let v = (mix(x ^ seed) >> 32) as u32;
            if v < *slot {
                *slot = v;
            }
        }
    }
    Some(sig)
}

/// The MinHash signature of a set of words (`None` when empty).
pub fn set_signature<'a>(items: impl Iterator<Item = &'a str>) -> Option<[u32; SIGNATURE_LEN]> {
    let seeds = seeds();
    let mut sig = [u32::MAX; SIGNATURE_LEN];
    let mut any = false;
    for item in items {
        any = true;
        let x = xxhash_rust::xxh3::xxh3_64(item.as_bytes());
        for (slot, seed) in sig.iter_mut().zip(seeds.iter()) {
            *slot = (*slot).min((mix(x ^ seed) >> 32) as u32);
        }
    }
    any.then_some(sig)
}

/// Estimated Jaccard similarity of two signatures' shingle sets.
pub fn estimated_jaccard(a: &[u32; SIGNATURE_LEN], b: &[u32; SIGNATURE_LEN]) -> f32 {
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f32 / SIGNATURE_LEN as f32
}

/// Candidate pairs `(i, j)`, `i < j`, that share at least one band key; `keys(i)` yields item
/// `i`'s band keys (band index mixed in). Stops at `max_pairs`; the flag says whether a bucket
/// or the pair bound cut anything.
pub fn candidate_pairs(n: usize, band_keys: impl Fn(usize) -> Vec<u64>, max_pairs: usize) -> (Vec<(u32, u32)>, bool) {
    let mut buckets: HashMap<u64, Vec<u32>> = HashMap::new();
    for i in 0..n {
        for k in band_keys(i) {
            buckets.entry(k).or_default().push(i as u32);
        }
    }
    let mut capped = false;
    let mut pairs = HashSet::new();
    let mut keys: Vec<u64> = buckets.keys().copied().collect();
    keys.sort_unstable();
    'outer: for k in keys {
        let Some(members) = buckets.get(&k) else { continue };
        if members.len() < 2 {
            continue;
        }
        if members.len() > MAX_BUCKET {
            capped = true;
        }
        let members = &members[..members.len().min(MAX_BUCKET)];
        for (x, &a) in members.iter().enumerate() {
            for &b in &members[x + 1..] {
                if pairs.len() >= max_pairs {
                    capped = true;
                    break 'outer;
                }
                pairs.insert((a.min(b), a.max(b)));
            }
        }
    }
    let mut out: Vec<(u32, u32)> = pairs.into_iter().collect();
    out.sort_unstable();
    (out, capped)
}

/// A MinHash signature's band keys.
pub fn minhash_bands(sig: &[u32; SIGNATURE_LEN]) -> Vec<u64> {
    (0..MINHASH_BANDS)
        .map(|b| {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            h.update(&(b as u32).to_le_bytes());
            for v in &sig[b * MINHASH_ROWS..(b + 1) * MINHASH_ROWS] {
                h.update(&v.to_le_bytes());
            }
            h.digest()
        })
        .collect()
}

/// Random-hyperplane LSH for unit vectors: `bands` bands of `bits` sign bits each. Two vectors
/// at angle θ agree on a bit with probability 1 - θ/π.
pub struct Hyperplanes {
    planes: Vec<Vec<f32>>,
    bands: usize,
    bits: usize,
}

impl Hyperplanes {
    /// Bits per band grow with the number of vectors (buckets stay small); 24 bands: at
    /// cosine 0.92 a pair shares a band with probability ≥ 0.93 even at 16 bits (≥ 0.9999 at 8).
    pub fn for_corpus(n: usize, dim: usize) -> Hyperplanes {
        let bits = ((usize::BITS - n.max(1).leading_zeros()) as usize).clamp(8, 16);
        let bands = 24;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state = mix(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
            // The sum of four uniforms is close enough to a normal for the planes' directions.
            (0..4).map(|k| ((state.rotate_left(16 * k) & 0xffff) as f32 / 65535.0) - 0.5).sum::<f32>()
        };
        let planes = (0..bands * bits).map(|_| (0..dim).map(|_| next()).collect()).collect();
        Hyperplanes { planes, bands, bits }
    }

    /// Bits per band (for the notice).
    pub fn bits(&self) -> usize {
        self.bits
    }

    /// The band keys of one vector.
    pub fn bands(&self, v: &[f32]) -> Vec<u64> {
        let signs: Vec<bool> =
            self.planes.iter().map(|p| p.iter().zip(v).map(|(a, b)| a * b).sum::<f32>() >= 0.0).collect();
        (0..self.bands)
            .map(|b| {
                let mut key = (b as u64) << 56;
                for (i, s) in signs[b * self.bits..(b + 1) * self.bits].iter().enumerate() {
                    key |= (*s as u64) << i;
                }
                key
            })
            .collect()
    }
}

/// Cosine of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(t: &str) -> [u32; SIGNATURE_LEN] {
        signature(&words(t)).unwrap()
    }

    #[test]
    fn exact_hash_ignores_whitespace_only() {
        assert_eq!(exact_hash("a  b\n c"), exact_hash("a b c"));
        assert_ne!(exact_hash("a b c"), exact_hash("a b C"));
    }

    #[test]
    fn minhash_estimates_jaccard() {
        let base = "the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the door";
        assert_eq!(estimated_jaccard(&sig(base), &sig(base)), 1.0);
        let edited = base.replace("warm", "cold");
        let j = estimated_jaccard(&sig(base), &sig(&edited));
        // 3 of 19 shingles differ on each side: true Jaccard 16/22 = 0.73.
        assert!((0.55..0.9).contains(&j), "{j}");
        let other = "indexing writes one tantivy segment per commit and merges them in the background later on";
        assert!(estimated_jaccard(&sig(base), &sig(other)) < 0.1);
        assert!(signature(&words("two words")).is_none());
    }

    #[test]
    fn identical_signatures_are_candidates_and_unrelated_ones_are_not() {
        let texts = [
            "the quick brown fox jumps over the lazy dog while the cat sleeps",
            "the quick brown fox jumps over the lazy dog while the cat sleeps",
            "indexing writes one tantivy segment per commit and merges them later",
        ];
        let sigs: Vec<_> = texts.iter().map(|t| sig(t)).collect();
        let (pairs, capped) = candidate_pairs(3, |i| minhash_bands(&sigs[i]), 100);
        assert_eq!(pairs, [(0, 1)]);
        assert!(!capped);
        let (pairs, capped) = candidate_pairs(2, |_| vec![1, 2], 0);
        assert!(pairs.is_empty() && capped);
    }

    #[test]
    fn hyperplanes_put_close_vectors_in_a_shared_band() {
        let h = Hyperplanes::for_corpus(1000, 8);
        let a = [0.5f32, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0];
        let b = [0.52f32, 0.48, 0.5, 0.5, 0.01, 0.0, 0.0, 0.0];
        let c = [0.0f32, 0.0, 0.0, 0.0, 0.5, -0.5, 0.5, -0.5];
        let (ka, kb, kc) = (h.bands(&a), h.bands(&b), h.bands(&c));
        assert!(ka.iter().zip(&kb).any(|(x, y)| x == y));
        assert!(!ka.iter().zip(&kc).any(|(x, y)| x == y));
    }
}
