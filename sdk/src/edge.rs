//! Edge authentication's shared part: the [`Authenticator`] trait, what it answers
//! ([`Identity`], [`Refusal`]), the scopes each method needs ([`MethodScopes`]) and
//! [`EdgeAuth`], which both transports (the HTTP router's `http::auth`, the gRPC binding) check
//! every A2A request with before the bridge sees it. A leaf of its own so that the two
//! transports, one layer, share it without naming each other; the router's refusals and the
//! shipped authenticators (JWTs, API keys) live with the router (`http::auth`).

use std::fmt;
use std::sync::Arc;

use agentlog_wire::a2a::SecurityScheme;
use agentlog_wire::jsonrpc::Operation;
use http::HeaderMap;

use crate::agent::Caller;

/// Who a request comes from, as its credentials prove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The principal and tenant the request acts as.
    pub caller: Caller,
    /// What the credentials allow (OAuth scopes, or a host's roles).
    pub scopes: Vec<String>,
}

impl Identity {
    /// Whether the credentials grant `scope` (an empty scope is always granted).
    pub fn has_scope(&self, scope: &str) -> bool {
        scope.is_empty() || self.scopes.iter().any(|s| s == scope)
    }
}

/// Why a request's credentials were not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request carries no credentials of this scheme.
    Missing,
    /// The credentials are malformed: a bad `Authorization` header, a token in the query
    /// string (RFC 6750 `invalid_request`).
    Malformed(String),
    /// The credentials are well-formed but not valid: bad signature, expired, wrong
    /// audience, unknown key, ... (RFC 6750 `invalid_token`).
    Invalid(String),
    /// The credentials cannot be checked right now (the issuer's keys cannot be fetched):
    /// `503`, retryable.
    Unavailable(String),
}

impl Refusal {
    /// What the client is told, without the credentials themselves.
    pub fn description(&self) -> &str {
        match self {
            Refusal::Missing => "this agent requires credentials",
            Refusal::Malformed(why) | Refusal::Invalid(why) | Refusal::Unavailable(why) => why,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// Turns a request's headers into an [`Identity`]. Implementations must not log or keep the
/// credentials; they see headers only (never the body, never the URL).
#[async_trait::async_trait]
pub trait Authenticator: fmt::Debug + Send + Sync + 'static {
    /// Who sent these headers, or why not accepted.
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Identity, Refusal>;

    /// The card's name for this scheme and how it is described there
    /// (`securitySchemes`).
    fn security_scheme(&self) -> (String, SecurityScheme);

    /// The `WWW-Authenticate` auth-scheme of a challenge: `Bearer` for tokens.
    fn challenge_scheme(&self) -> &'static str {
        "Bearer"
    }

    /// The OAuth authorization servers whose tokens this accepts, for protected resource
    /// metadata (RFC 9728; the MCP route serves it): the JWT issuers. Default none.
    fn authorization_servers(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The scopes each kind of method needs. An empty string needs none.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MethodScopes {
    /// SendMessage, SendStreamingMessage; creating a push config. Default `tasks:send`.
    pub send: String,
    /// GetTask, ListTasks, SubscribeToTask, GetExtendedAgentCard; reading push configs.
    /// Default `tasks:read`.
    pub read: String,
    /// CancelTask; deleting a push config. Default `tasks:cancel`.
    pub cancel: String,
}

impl Default for MethodScopes {
    fn default() -> Self {
        Self {
            send: "tasks:send".to_owned(),
            read: "tasks:read".to_owned(),
            cancel: "tasks:cancel".to_owned(),
        }
    }
}

impl MethodScopes {
    /// The scope `operation` needs.
    pub fn for_operation(&self, operation: Operation) -> &str {
        use Operation as O;
        match operation {
            O::SendMessage | O::SendStreamingMessage | O::CreateTaskPushNotificationConfig => {
                &self.send
            }
            O::GetTask
            | O::ListTasks
            | O::SubscribeToTask
            | O::GetExtendedAgentCard
            | O::GetTaskPushNotificationConfig
            | O::ListTaskPushNotificationConfigs => &self.read,
            O::CancelTask | O::DeleteTaskPushNotificationConfig => &self.cancel,
        }
    }

    /// Every scope some method needs, each once.
    pub fn all(&self) -> Vec<String> {
        let mut all: Vec<String> = [&self.send, &self.read, &self.cancel]
            .into_iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        all.dedup();
        all
    }
}

/// Edge authentication for the router: who may call, and what each method needs.
#[derive(Debug, Clone)]
pub struct EdgeAuth {
    /// Checks the credentials.
    pub authenticator: Arc<dyn Authenticator>,
    /// What each method needs.
    pub scopes: MethodScopes,
    /// The `realm` of challenges. Default `agentlog`.
    pub realm: String,
}

impl EdgeAuth {
    /// `authenticator` with the default scopes and realm.
    pub fn new(authenticator: impl Authenticator) -> Self {
        Self {
            authenticator: Arc::new(authenticator),
            scopes: MethodScopes::default(),
            realm: "agentlog".to_owned(),
        }
    }

    /// The same with other scopes.
    pub fn with_scopes(mut self, scopes: MethodScopes) -> Self {
        self.scopes = scopes;
        self
    }

    /// What the card says about it: the scheme, and one requirement naming it.
    pub fn declare(&self, card: &mut agentlog_wire::a2a::AgentCard) {
        let (name, scheme) = self.authenticator.security_scheme();
        card.security_schemes.entry(name.clone()).or_insert(scheme);
        let mut requirement = agentlog_wire::a2a::SecurityRequirement::default();
        requirement.schemes.insert(name, Default::default());
        if !card.security_requirements.contains(&requirement) {
            card.security_requirements.push(requirement);
        }
    }
}

impl PartialEq for EdgeAuth {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authenticator, &other.authenticator)
            && self.scopes == other.scopes
            && self.realm == other.realm
    }
}

impl Eq for EdgeAuth {}

/// The bearer token of `headers`: `Ok(None)` when there is no `Authorization` header.
/// Several headers, another scheme or an empty token are malformed; tokens longer than
/// [`MAX_TOKEN_BYTES`] are refused before anything parses them.
pub fn bearer_token(headers: &HeaderMap) -> Result<Option<&str>, Refusal> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal::Malformed(
            "more than one Authorization header".to_owned(),
        ));
    }
    let text = value
        .to_str()
        .map_err(|_| Refusal::Malformed("the Authorization header is not ASCII".to_owned()))?;
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Refusal::Malformed(
            "the Authorization header must be `Bearer <token>`".to_owned(),
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(Refusal::Malformed("the bearer token is empty".to_owned()));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Refusal::Invalid(format!(
            "the bearer token is longer than {MAX_TOKEN_BYTES} bytes"
        )));
    }
    if !is_b64token(token) {
        return Err(Refusal::Malformed(
            "the bearer token holds characters no token has (RFC 6750 b64token)".to_owned(),
        ));
    }
    Ok(Some(token))
}

/// RFC 6750 §2.1: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
}

/// The longest bearer token looked at: real JWTs are a few kilobytes at most.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
