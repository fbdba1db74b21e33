//! `agentlog.verify_notification`: a webhook receiver's check of a push notification an agent
//! signed (`agentlog::push::verify`), over plain Python data.

use agentlog::push::verify::{Expect, Keys, verify};
use pyo3::prelude::*;
use serde_json::json;

use crate::error::to_py_err;
use crate::json::{to_json, to_py};

/// The claims of a notification's JWT (the `Agentlog-Notification-Signature` header, or the
/// `Authorization: Bearer` one) once its signature by one of `jwks`'s keys (the agent's
/// `/.well-known/jwks.json`, as text or parsed), its audience (`audience`: the URL the
/// receiver registered), its issuer (when given), its times (against `now`, Unix seconds,
/// when given) and its body's hash hold; `UnauthenticatedError` saying why otherwise.
#[pyfunction]
#[pyo3(signature = (jwt, body, jwks, audience, issuer = None, now = None))]
fn verify_notification<'py>(
    py: Python<'py>,
    jwt: &str,
    body: &[u8],
    jwks: &Bound<'py, PyAny>,
    audience: String,
    issuer: Option<String>,
    now: Option<u64>,
) -> PyResult<Bound<'py, PyAny>> {
    let jwks = match jwks.extract::<String>() {
        Ok(text) => text,
        Err(_) => to_json(jwks, "jwks")?.to_string(),
    };
    let keys = Keys::from_jwks(&jwks).map_err(|e| to_py_err(py, e))?;
    let mut expect = Expect::new(audience);
    expect.issuer = issuer;
    expect.now = now;
    let claims = verify(jwt, body, &keys, &expect).map_err(|e| to_py_err(py, e))?;
    to_py(
        py,
        &json!({
            "iss": claims.iss,
            "aud": claims.aud,
            "iat": claims.iat,
            "exp": claims.exp,
            "jti": claims.jti,
            "taskId": claims.task_id,
            "request_body_sha256": claims.request_body_sha256,
        }),
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(verify_notification, m)?)
}
