//! The protobuf messages of ORC's metadata that the reader needs (Apache ORC
//! `proto/orc_proto.proto`, ORC v1 specification "File Tail" and "Stripes"), written by hand for
//! prost's derive macros. Fields the reader never looks at (statistics, encryption, bloom filter
//! settings) are left out: protobuf skips unknown fields, so their bytes are still checked for
//! well-formedness but not kept.
//!
//! Enumerations are kept as raw `i32`/`u32` so that an unknown value (a newer writer's kind) is
//! reported by the reader with its number instead of being silently mapped to a default.

#![allow(missing_docs)]

/// `message PostScript`: the uncompressed last message of the file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PostScript {
    #[prost(uint64, optional, tag = "1")]
    pub footer_length: Option<u64>,
    #[prost(int32, optional, tag = "2")]
    pub compression: Option<i32>,
    #[prost(uint64, optional, tag = "3")]
    pub compression_block_size: Option<u64>,
    #[prost(uint32, repeated, tag = "4")]
    pub version: Vec<u32>,
    #[prost(uint64, optional, tag = "5")]
    pub metadata_length: Option<u64>,
    #[prost(uint32, optional, tag = "6")]
    pub writer_version: Option<u32>,
    #[prost(string, optional, tag = "8000")]
    pub magic: Option<String>,
}

/// `message Footer`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Footer {
    #[prost(uint64, optional, tag = "1")]
    pub header_length: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub content_length: Option<u64>,
    #[prost(message, repeated, tag = "3")]
    pub stripes: Vec<StripeInformation>,
    #[prost(message, repeated, tag = "4")]
    pub types: Vec<Type>,
    #[prost(uint64, optional, tag = "6")]
    pub number_of_rows: Option<u64>,
    #[prost(uint32, optional, tag = "8")]
    pub row_index_stride: Option<u32>,
    #[prost(uint32, optional, tag = "9")]
    pub writer: Option<u32>,
}

/// `message StripeInformation`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StripeInformation {
    #[prost(uint64, optional, tag = "1")]
    pub offset: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    pub index_length: Option<u64>,
    #[prost(uint64, optional, tag = "3")]
    pub data_length: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub footer_length: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub number_of_rows: Option<u64>,
    #[prost(uint64, optional, tag = "6")]
    pub encrypt_stripe_id: Option<u64>,
}

/// `message Type`: one node of the type tree, in pre-order; node 0 is the root struct.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Type {
    #[prost(int32, optional, tag = "1")]
    pub kind: Option<i32>,
    #[prost(uint32, repeated, tag = "2")]
    pub subtypes: Vec<u32>,
    #[prost(string, repeated, tag = "3")]
    pub field_names: Vec<String>,
    #[prost(uint32, optional, tag = "4")]
    pub maximum_length: Option<u32>,
    #[prost(uint32, optional, tag = "5")]
    pub precision: Option<u32>,
    #[prost(uint32, optional, tag = "6")]
    pub scale: Option<u32>,
}

/// `message StripeFooter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StripeFooter {
    #[prost(message, repeated, tag = "1")]
    pub streams: Vec<Stream>,
    #[prost(message, repeated, tag = "2")]
    pub columns: Vec<ColumnEncoding>,
    #[prost(string, optional, tag = "3")]
    pub writer_timezone: Option<String>,
}

/// `message Stream`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Stream {
    #[prost(int32, optional, tag = "1")]
    pub kind: Option<i32>,
    #[prost(uint32, optional, tag = "2")]
    pub column: Option<u32>,
    #[prost(uint64, optional, tag = "3")]
    pub length: Option<u64>,
}

/// `message ColumnEncoding`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ColumnEncoding {
    #[prost(int32, optional, tag = "1")]
    pub kind: Option<i32>,
    #[prost(uint32, optional, tag = "2")]
    pub dictionary_size: Option<u32>,
}

/// `enum Stream.Kind` values the reader uses.
pub mod stream_kind {
    pub const PRESENT: i32 = 0;
    pub const DATA: i32 = 1;
    pub const LENGTH: i32 = 2;
    pub const DICTIONARY_DATA: i32 = 3;
    pub const SECONDARY: i32 = 5;
}

/// `enum ColumnEncoding.Kind`.
pub mod encoding_kind {
    pub const DIRECT: i32 = 0;
    pub const DICTIONARY: i32 = 1;
    pub const DIRECT_V2: i32 = 2;
    pub const DICTIONARY_V2: i32 = 3;
}
