//! The `crypto` tool as data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolshed_core::{ToolAnnotations, ToolSpec};

use crate::util::GROUP;

const DESCRIPTION: &str = "Hash, HMAC and encode/decode bytes. Operations:\n\
- `hash`: `algorithm` (md5|sha1|sha256|sha512) and `input`, optional `input_encoding` \
(utf8 default, hex, base64) to hash binary data; returns the hex digest (base64 too in the \
structured result). md5 and sha1 are broken for security: use them only for checksums and \
legacy formats, never for passwords or signatures.\n\
- `hmac`: HMAC-SHA256 of `input` with `key`; optional `key_encoding` and `input_encoding` \
(utf8|hex|base64), optional `algorithm` to use another hash; returns hex and base64.\n\
- `encode` / `decode`: `encoding` (base64|base64url|hex|url) and `input`. base64url encodes \
without padding and decodes with or without it; url percent-encodes one URL component \
(everything but A-Z a-z 0-9 - . _ ~) and decodes only %XX escapes (`+` stays `+`). Decoded \
bytes that are not UTF-8 come back as hex, with a note. `encode` also takes `input_encoding` \
to convert, e.g. hex to base64.\n\
Inputs and keys up to 1 MiB.";

/// The `crypto` tool's spec.
pub(super) fn spec() -> ToolSpec {
    ToolSpec::new("crypto", DESCRIPTION)
        .title("Hash, HMAC, base64/hex/url encode and decode")
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
    /// What to do: `hash` a value, compute an `hmac`, or `encode` / `decode` it.
    pub(super) operation: Operation,
    /// The data to hash, authenticate, encode or decode (up to 1 MiB).
    pub(super) input: String,
    /// Hash function. Required for `hash`; `hmac` uses sha256 if omitted. md5 and sha1 are not secure.
    pub(super) algorithm: Option<Algorithm>,
    /// How `input` is turned into bytes for `hash`, `hmac` and `encode`.
    #[schemars(default = "utf8")]
    pub(super) input_encoding: Option<BytesEncoding>,
    /// The secret key for `hmac`.
    pub(super) key: Option<String>,
    /// How `key` is turned into bytes.
    #[schemars(default = "utf8")]
    pub(super) key_encoding: Option<BytesEncoding>,
    /// The encoding for `encode` and `decode`.
    pub(super) encoding: Option<Encoding>,
}
