//! The request parser on arbitrary bytes, whole and cut at an arbitrary point: it never
//! panics, and reading the same bytes in two pieces gives the same requests (or the same
//! error) as reading them at once.
#![no_main]

use bloomkit_server::resp::decode::Parser;
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;

fn parse_all(pieces: &[&[u8]]) -> (Vec<Vec<bytes::Bytes>>, Option<String>) {
    let mut parser = Parser::new();
    let mut buf = BytesMut::new();
    let mut requests = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match parser.parse(&mut buf) {
                Ok(Some(request)) => requests.push(request),
                Ok(None) => break,
                Err(e) => return (requests, Some(e.message())),
            }
        }
    }
    (requests, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let at = if rest.is_empty() { 0 } else { cut as usize % rest.len() };
    let whole = parse_all(&[rest]);
    let split = parse_all(&[&rest[..at], &rest[at..]]);
    assert_eq!(whole, split);
});
