//! An HTTP frontend's refusal: a status, a stable code and a message, in the body shape the
//! frontend's protocol fixes (AG-UI's `{"error": {message, code}}`, OpenAI's with `type` and
//! `param`). The struct, its constructors and its response are one; only the shape differs.

use std::fmt;
use std::marker::PhantomData;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// How one frontend writes its errors.
pub trait ErrorShape {
    /// The code of a request the frontend cannot read (400).
    const INVALID: &'static str;
    /// The code of a request without a valid token (401).
    const UNAUTHORIZED: &'static str;
    /// The JSON body of `error`.
    fn body(error: &ApiError<Self>) -> Value
    where
        Self: Sized;
}

/// A refused request, answered as JSON in the shape `S`.
pub struct ApiError<S> {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    shape: PhantomData<fn() -> S>,
}

impl<S: ErrorShape> ApiError<S> {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), shape: PhantomData }
    }

    /// 400: the request cannot be read or asks for what cannot be.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, S::INVALID, message)
    }

    /// 401: no valid token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, S::UNAUTHORIZED, message)
    }

    /// 403 `forbidden_origin`: a page from an origin the Origin rule refuses.
    pub fn forbidden_origin(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden_origin", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 405: a route that does not take the request's method.
    pub fn method_not_allowed() -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this endpoint does not take that method")
    }

    pub fn body(&self) -> Value {
        S::body(self)
    }
}

impl<S: ErrorShape> IntoResponse for ApiError<S> {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

// By hand: derives would ask the shape marker for the same traits.
impl<S> fmt::Debug for ApiError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiError")
            .field("status", &self.status)
            .field("code", &self.code)
            .field("message", &self.message)
            .finish()
    }
}

impl<S> Clone for ApiError<S> {
    fn clone(&self) -> Self {
        ApiError { status: self.status, code: self.code, message: self.message.clone(), shape: PhantomData }
    }
}

impl<S> PartialEq for ApiError<S> {
    fn eq(&self, other: &Self) -> bool {
        (self.status, self.code, &self.message) == (other.status, other.code, &other.message)
    }
}

impl<S> Eq for ApiError<S> {}
