//! JSON-RPC 2.0 messages: the request decoder (run on the network threads,
//! before anything reaches the game thread) and the error codes.

use serde_json::{Map, Value, json};

/// JSON-RPC and Bevy Remote Protocol error codes.
pub mod codes {
    /// The body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid request (or the body is too large).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters have the wrong shape.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed (the game loop did not answer in time).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The entity does not exist (BRP's code).
    pub const ENTITY_NOT_FOUND: i64 = -23401;
    /// A component could not be read or written: unregistered, or a value
    /// of the wrong shape (BRP's code).
    pub const COMPONENT_ERROR: i64 = -23402;
    /// The entity has no such component (BRP's code).
    pub const COMPONENT_NOT_PRESENT: i64 = -23403;
    /// A resource could not be read or written (BRP's code).
    pub const RESOURCE_ERROR: i64 = -23501;
    /// The world has no such resource (BRP's code).
    pub const RESOURCE_NOT_PRESENT: i64 = -23502;
    /// A schedule method was called on an inspector updated without a
    /// schedule, or named an unknown system (mosaic's code).
    pub const SCHEDULE_ERROR: i64 = -23601;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(codes::INVALID_PARAMS, message)
    }

    pub fn to_json(&self) -> Value {
        json!({ "code": self.code, "message": self.message })
    }
}

/// One decoded call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    /// `None` for a notification (no `id` member: no response).
    pub id: Option<Value>,
    pub method: String,
    pub params: Value,
}

/// A decoded body: one call, or a batch whose invalid members are already
/// answered with their errors.
#[derive(Debug, PartialEq)]
pub(crate) enum Body {
    Single(Call),
    Batch(Vec<Result<Call, (Value, RpcError)>>),
}

/// Most calls one batch may hold.
pub(crate) const MAX_BATCH: usize = 64;

/// Decodes a request body. Errors carry the id to answer with (`null` when
/// it cannot be known).
pub(crate) fn decode(body: &[u8], max_len: usize) -> Result<Body, (Value, RpcError)> {
    if body.len() > max_len {
        return Err((
            Value::Null,
            RpcError::new(
                codes::INVALID_REQUEST,
                format!("request body exceeds the limit of {max_len} bytes"),
            ),
        ));
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::new(codes::PARSE_ERROR, format!("parse error: {e}")),
        )
    })?;
    match value {
        Value::Array(items) => {
            if items.is_empty() {
                return Err((
                    Value::Null,
                    RpcError::new(codes::INVALID_REQUEST, "empty batch"),
                ));
            }
            if items.len() > MAX_BATCH {
                return Err((
                    Value::Null,
                    RpcError::new(
                        codes::INVALID_REQUEST,
                        format!("a batch holds at most {MAX_BATCH} calls"),
                    ),
                ));
            }
            Ok(Body::Batch(items.into_iter().map(decode_call).collect()))
        }
        other => decode_call(other).map(Body::Single),
    }
}

/// Decodes one request object.
pub(crate) fn decode_call(value: Value) -> Result<Call, (Value, RpcError)> {
    let invalid = |id: Value, message: &str| {
        Err((
            id,
            RpcError::new(
                codes::INVALID_REQUEST,
                format!("invalid request: {message}"),
            ),
        ))
    };
    let Value::Object(mut object) = value else {
        return invalid(Value::Null, "a request is a JSON object");
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ (Value::Null | Value::Number(_) | Value::String(_))) => Some(id),
        Some(_) => return invalid(Value::Null, "`id` must be a string, a number or null"),
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(answer_id, "`jsonrpc` must be \"2.0\"");
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        _ => return invalid(answer_id, "`method` must be a string"),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(params @ (Value::Object(_) | Value::Array(_))) => params,
        Some(_) => return invalid(answer_id, "`params` must be an object or an array"),
    };
    Ok(Call { id, method, params })
}

/// The response to a call.
pub(crate) fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_calls_and_refuses_bad_ones() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"world.query","params":{"data":{}}}"#;
        let Body::Single(call) = decode(body, 1024).unwrap() else {
            panic!("one call")
        };
        assert_eq!(call.method, "world.query");
        assert_eq!(call.id, Some(json!(1)));

        let code = |body: &[u8]| decode(body, 64).unwrap_err().1.code;
        assert_eq!(code(b"{not json"), codes::PARSE_ERROR);
        assert_eq!(code(b"[]"), codes::INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","method":"m"}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":7}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":"m","params":3}"#),
            codes::INVALID_REQUEST
        );
        assert_eq!(code(&[b' '; 65]), codes::INVALID_REQUEST);
        // A notification has no id.
        let Body::Single(call) = decode(br#"{"jsonrpc":"2.0","method":"m"}"#, 64).unwrap() else {
            panic!("one call")
        };
        assert_eq!(call.id, None);
        // A batch answers its bad members one by one.
        let Body::Batch(calls) =
            decode(br#"[{"jsonrpc":"2.0","id":"a","method":"m"}, 5]"#, 128).unwrap()
        else {
            panic!("a batch")
        };
        assert!(calls[0].is_ok() && calls[1].is_err());
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            "[a-z.+]{0,12}".prop_map(Value::String),
            Just(json!("2.0")),
            Just(json!("world.query")),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("jsonrpc".to_owned()),
                        Just("id".to_owned()),
                        Just("method".to_owned()),
                        Just("params".to_owned()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Arbitrary bytes never panic the decoder; whatever it accepts is
        /// a well-formed call.
        #[test]
        fn arbitrary_bytes_decode_or_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
            match decode(&bytes, 200) {
                Ok(Body::Single(call)) => prop_assert!(call.params.is_object() || call.params.is_array()),
                Ok(Body::Batch(calls)) => prop_assert!(!calls.is_empty() && calls.len() <= MAX_BATCH),
                Err((_, e)) => prop_assert!(e.code == codes::PARSE_ERROR || e.code == codes::INVALID_REQUEST),
            }
        }

        /// Arbitrary JSON documents: a call is accepted exactly when it has
        /// the request shape.
        #[test]
        fn arbitrary_json_is_accepted_only_in_request_shape(value in arb_json()) {
            let text = serde_json::to_vec(&value).unwrap();
            let expected_single = match &value {
                Value::Object(o) => o.get("jsonrpc") == Some(&json!("2.0"))
                    && o.get("method").is_some_and(Value::is_string)
                    && o.get("params").is_none_or(|p| p.is_null() || p.is_object() || p.is_array())
                    && o.get("id").is_none_or(|i| i.is_null() || i.is_number() || i.is_string()),
                _ => false,
            };
            match decode(&text, usize::MAX) {
                Ok(Body::Single(_)) => prop_assert!(expected_single),
                Ok(Body::Batch(_)) => prop_assert!(value.is_array()),
                Err(_) => prop_assert!(!expected_single),
            }
        }
    }
}
