//! CI's short stand-in for `fuzz/fuzz_targets/http.rs`: a few hundred thousand random and
//! mutated server responses through the HTTP/1.1 head parser and the chunked decoder, on
//! stable Rust with a fixed seed. Nothing may panic; a head parses the same without what
//! follows it; the chunked decoder gives the same answer fed whole or in pieces.

#![cfg(test)]

use npt_http::h1::{parse_head, Chunked};
use rand::{rngs::StdRng, Rng, SeedableRng};

const SEEDS: &[&[u8]] = &[
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n",
    b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\n",
    b"HTTP/1.0 204 No\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
];
/// Bytes that matter to the parsers, so mutations reach their branches.
const ALPHABET: &[u8] = b"\r\n:;, 0123456789abcdefABCDEFxX\t\0\xff";

fn mutate(rng: &mut StdRng, input: &mut Vec<u8>) {
    for _ in 0..=rng.gen_range(0..4) {
        let at = rng.gen_range(0..input.len() + 1);
        match rng.gen_range(0..4) {
            0 if at < input.len() => input[at] = ALPHABET[rng.gen_range(0..ALPHABET.len())],
            1 => input.insert(at, ALPHABET[rng.gen_range(0..ALPHABET.len())]),
            2 if at < input.len() => {
                let end = (at + rng.gen_range(0..8)).min(input.len());
                input.drain(at..end);
            }
            _ => input.insert(at, rng.gen::<u8>()),
        }
    }
}

fn chunked(body: &[u8], piece: usize) -> (Result<(usize, bool), &'static str>, u64) {
    let mut d = Chunked::default();
    let mut used = 0;
    for chunk in body.chunks(piece.max(1)) {
        match d.feed(chunk) {
            Err(e) => return (Err(e), d.data),
            Ok((u, done)) => {
                assert!(u <= chunk.len());
                used += u;
                if done {
                    return (Ok((used, true)), d.data);
                }
                assert_eq!(u, chunk.len(), "an unfinished body consumes every byte");
            }
        }
    }
    (Ok((used, false)), d.data)
}

#[test]
fn random_and_mutated_responses_never_panic() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let mut rng = StdRng::seed_from_u64(11);
    let (mut heads, mut bodies) = (0, 0);
    for i in 0..300_000 {
        let input: Vec<u8> = if i % 4 == 0 {
            (0..rng.gen_range(0..64)).map(|_| rng.gen::<u8>()).collect()
        } else {
            let mut v = SEEDS[rng.gen_range(0..SEEDS.len())].to_vec();
            mutate(&mut rng, &mut v);
            v
        };
        if let Ok(Some((status, n, framing, keep_alive))) = parse_head(&input) {
            heads += 1;
            assert!(n <= input.len() && status <= 999);
            let again = parse_head(&input[..n]).unwrap().unwrap();
            assert_eq!(again, (status, n, framing, keep_alive), "{input:?}");
        }
        let whole = chunked(&input, input.len());
        if let (Ok((used, true)), data) = whole {
            bodies += 1;
            assert!(data <= used as u64);
        }
        let piece = 1 + rng.gen_range(0..7);
        assert_eq!(
            chunked(&input, piece),
            whole,
            "{input:?} in pieces of {piece}"
        );
    }
    // The mutations must keep reaching the complete-input paths, or the test proves little.
    assert!(
        heads > 10_000 && bodies > 10_000,
        "{heads} heads, {bodies} bodies"
    );
}
