//! The `serde` feature: filters inside a user's own serde types round-trip through a text
//! format (JSON) and a binary one (postcard), as the bytes of their file format, so that
//! what was serialized is still readable by `from_bytes`; damaged bytes are refused with the
//! format's own error; the views deserialize without a copy where the format lends bytes.

use bloomkit::{
    AgingBloomFilter, AnyFilter, AtomicBloomFilter, BinaryFuseFilter, BlockedBloomFilter,
    BlockedBloomFilterRef, BloomFilter, BloomFilterRef, CountingBloomFilter, CuckooFilter,
    RibbonFilter, ScalableBloomFilter,
};
use serde::{Deserialize, Serialize};

/// A user's struct holding one filter of every kind.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Index {
    name: String,
    classic: BloomFilter,
    blocked: BlockedBloomFilter,
    atomic: AtomicBloomFilter,
    counting: CountingBloomFilter,
    scalable: ScalableBloomFilter,
    cuckoo: CuckooFilter,
    ribbon: RibbonFilter,
    fuse: BinaryFuseFilter,
    aging: AgingBloomFilter,
    any: AnyFilter,
    generation: u32,
}

fn index() -> Index {
    let keys: Vec<String> = (0..500).map(|i| format!("key:{i}")).collect();
    let mut classic = BloomFilter::new(1000, 0.01).unwrap();
    classic.extend(&keys);
    let mut blocked = BlockedBloomFilter::builder(1000, 0.01)
        .seed(7)
        .build()
        .unwrap();
    blocked.extend(&keys);
    let mut atomic = AtomicBloomFilter::new(1000, 0.01).unwrap();
    atomic.extend(&keys);
    let mut counting = CountingBloomFilter::new(1000, 0.01).unwrap();
    counting.extend(&keys);
    let mut scalable = ScalableBloomFilter::new(100, 0.01).unwrap();
    for k in &keys {
        scalable.insert(k).unwrap();
    }
    let cuckoo = CuckooFilter::from_keys(&keys, 0.01).unwrap();
    let mut aging = AgingBloomFilter::new(1000, 0.01).unwrap();
    aging.extend(&keys[..250]);
    aging.rotate();
    aging.extend(&keys[250..]);
    Index {
        name: "users".into(),
        classic,
        blocked,
        atomic,
        counting,
        scalable,
        cuckoo,
        ribbon: RibbonFilter::build(&keys, 0.01).unwrap(),
        fuse: BinaryFuseFilter::build(&keys, 0.01).unwrap(),
        aging,
        any: CountingBloomFilter::from_keys(&keys, 0.05).unwrap().into(),
        generation: 3,
    }
}

fn answers_every_key(ix: &Index) {
    for i in 0..500 {
        let k = format!("key:{i}");
        assert!(ix.classic.contains(&k) && ix.blocked.contains(&k) && ix.atomic.contains(&k));
        assert!(ix.counting.contains(&k) && ix.scalable.contains(&k) && ix.cuckoo.contains(&k));
        assert!(ix.ribbon.contains(&k) && ix.fuse.contains(&k) && ix.aging.contains(&k));
        assert!(ix.any.contains(&k));
    }
}

#[test]
fn a_struct_of_filters_round_trips_through_json() {
    let ix = index();
    let json = serde_json::to_string(&ix).unwrap();
    let back: Index = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ix);
    answers_every_key(&back);

    // Each filter is its file format, byte for byte: readable by from_bytes.
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let bytes: Vec<u8> = serde_json::from_value(value["blocked"].clone()).unwrap();
    assert_eq!(bytes, ix.blocked.to_bytes());
    assert_eq!(BlockedBloomFilter::from_bytes(&bytes).unwrap(), ix.blocked);
    let bytes: Vec<u8> = serde_json::from_value(value["any"].clone()).unwrap();
    assert_eq!(AnyFilter::from_bytes(&bytes).unwrap(), ix.any);
}

#[test]
fn a_struct_of_filters_round_trips_through_postcard() {
    let ix = index();
    let bytes = postcard::to_allocvec(&ix).unwrap();
    let back: Index = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back, ix);
    answers_every_key(&back);
    // A byte string in postcard is its length and the bytes: the file format is in there
    // as it is.
    let file = ix.scalable.to_bytes();
    assert!(bytes.windows(file.len()).any(|w| w == file.as_slice()));
}

/// Damaged bytes are refused by deserialization as `from_bytes` refuses them, with its
/// message, never a panic; a wrong kind likewise.
#[test]
fn damaged_or_wrong_filters_are_refused_with_the_formats_message() {
    let f = BloomFilter::from_keys(["a", "b"], 0.01).unwrap();
    let mut bytes = f.to_bytes();
    bytes[50] ^= 1;
    let json = serde_json::to_string(&bytes).unwrap();
    let err = serde_json::from_str::<BloomFilter>(&json).unwrap_err();
    let from_bytes = BloomFilter::from_bytes(&bytes).unwrap_err();
    assert!(err.to_string().contains(&from_bytes.to_string()), "{err}");

    let good = serde_json::to_string(&f).unwrap();
    let err = serde_json::from_str::<BlockedBloomFilter>(&good).unwrap_err();
    assert!(err.to_string().contains("classic"), "{err}");
    assert!(serde_json::from_str::<BloomFilter>("\"not bytes\"").is_err());
    assert!(serde_json::from_str::<BloomFilter>("[1, 2, 300]").is_err());
    assert!(postcard::from_bytes::<BloomFilter>(&[200, 1, 2]).is_err());
}

/// A struct borrowing its input: the views read the serialized bytes in place.
#[derive(Serialize, Deserialize)]
struct Borrowed<'a> {
    #[serde(borrow)]
    blocked: BlockedBloomFilterRef<'a>,
    #[serde(borrow)]
    classic: BloomFilterRef<'a>,
}

#[test]
fn views_deserialize_in_place_from_a_borrowing_format() {
    let ix = index();
    // Serialized as the owned filters, read back as views: the same bytes.
    #[derive(Serialize)]
    struct Owned<'a> {
        blocked: &'a BlockedBloomFilter,
        classic: &'a BloomFilter,
    }
    let bytes = postcard::to_allocvec(&Owned {
        blocked: &ix.blocked,
        classic: &ix.classic,
    })
    .unwrap();
    let views: Borrowed<'_> = postcard::from_bytes(&bytes).unwrap();
    let range = bytes.as_ptr_range();
    assert!(
        range.contains(&views.blocked.as_bytes().as_ptr()),
        "a copy was made"
    );
    for i in 0..2000 {
        let k = format!("key:{i}");
        assert_eq!(views.blocked.contains(&k), ix.blocked.contains(&k));
        assert_eq!(views.classic.contains(&k), ix.classic.contains(&k));
    }
    // And a view serializes as the owned filter does.
    assert_eq!(
        postcard::to_allocvec(&views).unwrap(),
        bytes,
        "a view's serialization differs"
    );
    // JSON has no bytes to lend: the view says what to do instead.
    let json = serde_json::to_string(&ix.classic).unwrap();
    let err = serde_json::from_str::<BloomFilterRef<'_>>(&json)
        .expect_err("a JSON array cannot be borrowed");
    assert!(
        err.to_string().contains("deserialize the owned filter"),
        "{err}"
    );
}
