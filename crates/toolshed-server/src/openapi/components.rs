//! The document's shared schemas (`components/schemas`): those of the answers, generated
//! from the reply types ([`Replies`]), and the body of a call, from the type its handler
//! reads.

use serde_json::Value;

use crate::api::Execute;
use crate::events::ApiEvent;
use crate::reply::ErrorBody;

use super::body_of;
use super::dialect::Replies;

/// Puts in `replies` the components every document has, whether an operation's schema
/// names them or not: `Error`, which every error answer refers to, and `Event`, what the
/// event streams carry.
pub(super) fn always(replies: &mut Replies) {
    replies.of::<ErrorBody>();
    replies.of::<ApiEvent>();
}

/// `components/schemas`: what the operations' schemas referred to, and `ExecuteRequest`.
pub(super) fn schemas(replies: Replies) -> Value {
    let mut schemas = replies.components();
    schemas.insert("ExecuteRequest".into(), body_of::<Execute>());
    Value::Object(schemas)
}
