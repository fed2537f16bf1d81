//! The `crypto` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_core::{ToolAnnotations, ToolSpec};

use crate::util::GROUP;

const DESCRIPTION: &str = "Hash, HMAC, encode or decode bytes.";

/// The `crypto` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new("crypto", DESCRIPTION)
        .title("Hash and encode")
        .input_schema(crate::args::schema::<Args>())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Operation {
    Hash,
    Hmac,
    Encode,
    Decode,
}

impl Operation {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Hash => "hash",
            Self::Hmac => "hmac",
            Self::Encode => "encode",
            Self::Decode => "decode",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Algorithm {
    Md5,
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Md5 => "md5",
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Sha512 => "sha512",
        }
    }
}

/// How a string argument becomes bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum BytesEncoding {
    #[default]
    Utf8,
    Hex,
    Base64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(super) enum Encoding {
    Base64,
    Base64url,
    Hex,
    Url,
}

impl Encoding {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Base64 => "base64",
            Self::Base64url => "base64url",
            Self::Hex => "hex",
            Self::Url => "url",
        }
    }
}

/// What the schema shows for an encoding left out; the field stays an `Option` because an
/// operation that does not read it refuses it when present.
fn utf8() -> Option<BytesEncoding> {
    Some(BytesEncoding::Utf8)
}

/// The arguments of `crypto`; each operation reads the fields it needs and refuses the rest.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// hmac: with `key`. encode, decode: in `encoding`.
    pub(super) operation: Operation,
    /// The data
    pub(super) input: String,
    /// hash, hmac (sha256)
    pub(super) algorithm: Option<Algorithm>,
    /// How `input` is read
    #[schemars(default = "utf8")]
    pub(super) input_encoding: Option<BytesEncoding>,
    /// hmac: the key
    pub(super) key: Option<String>,
    /// How `key` is read
    #[schemars(default = "utf8")]
    pub(super) key_encoding: Option<BytesEncoding>,
    /// url: one URL component
    pub(super) encoding: Option<Encoding>,
}
