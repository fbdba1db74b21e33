//! Security schemes and requirements of an agent card (OpenAPI-style, as proto `oneof`s).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::oneof::exactly_one;
use super::via_repr;

/// How a client authenticates: one of five scheme kinds, keyed by member name in JSON, e.g.
/// `{"httpAuthSecurityScheme":{"scheme":"Bearer"}}`. Reading ignores sibling keys, so the
/// dual-version cards that add 0.3's `"type":"http"` next to the member parse too.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    ApiKeySecurityScheme {
        /// Human-readable description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// `header`, `query` or `cookie` (0.3: `in`).
        location: String,
        /// The header, parameter or cookie name.
        name: String,
    },
    /// HTTP authentication (`Authorization: <scheme> …`).
    HttpAuthSecurityScheme {
        /// Human-readable description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// IANA auth scheme name, e.g. `Bearer` (case-insensitive).
        scheme: String,
        /// Hint for the bearer token format, e.g. `JWT`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bearer_format: Option<String>,
    },
    /// OAuth 2.0 (JSON key `oauth2SecurityScheme`).
    Oauth2SecurityScheme {
        /// Human-readable description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The flow.
        flows: OAuthFlows,
        /// RFC 8414 authorization server metadata URL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        oauth2_metadata_url: Option<String>,
    },
    /// OpenID Connect discovery.
    OpenIdConnectSecurityScheme {
        /// Human-readable description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// The OpenID Connect discovery URL.
        open_id_connect_url: String,
    },
    /// Mutual TLS.
    MtlsSecurityScheme {
        /// Human-readable description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// The reading shape of [`SecurityScheme`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SecuritySchemeRepr {
    #[serde(default, alias = "api_key_security_scheme")]
    api_key_security_scheme: Option<ApiKeyRepr>,
    #[serde(default, alias = "http_auth_security_scheme")]
    http_auth_security_scheme: Option<HttpAuthRepr>,
    #[serde(default, alias = "oauth2_security_scheme")]
    oauth2_security_scheme: Option<OAuth2Repr>,
    #[serde(default, alias = "open_id_connect_security_scheme")]
    open_id_connect_security_scheme: Option<OpenIdConnectRepr>,
    #[serde(default, alias = "mtls_security_scheme")]
    mtls_security_scheme: Option<MtlsRepr>,
}

/// `apiKeySecurityScheme` body.
#[derive(Deserialize)]
struct ApiKeyRepr {
    #[serde(default)]
    description: Option<String>,
    location: String,
    name: String,
}

/// `httpAuthSecurityScheme` body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HttpAuthRepr {
    #[serde(default)]
    description: Option<String>,
    scheme: String,
    #[serde(default, alias = "bearer_format")]
    bearer_format: Option<String>,
}

/// `oauth2SecurityScheme` body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OAuth2Repr {
    #[serde(default)]
    description: Option<String>,
    flows: OAuthFlows,
    #[serde(default, alias = "oauth2_metadata_url")]
    oauth2_metadata_url: Option<String>,
}

/// `openIdConnectSecurityScheme` body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenIdConnectRepr {
    #[serde(default)]
    description: Option<String>,
    #[serde(alias = "open_id_connect_url")]
    open_id_connect_url: String,
}

/// `mtlsSecurityScheme` body.
#[derive(Deserialize)]
struct MtlsRepr {
    #[serde(default)]
    description: Option<String>,
}

/// Reads by member name; exactly one member, unknown keys ignored.
impl<'de> Deserialize<'de> for SecurityScheme {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        via_repr::<D, SecuritySchemeRepr, Self>(deserializer, "a security scheme object")
    }
}

impl TryFrom<SecuritySchemeRepr> for SecurityScheme {
    type Error = String;

    fn try_from(repr: SecuritySchemeRepr) -> Result<Self, String> {
        exactly_one(
            "a security scheme",
            &[
                (
                    "apiKeySecurityScheme",
                    repr.api_key_security_scheme.is_some(),
                ),
                (
                    "httpAuthSecurityScheme",
                    repr.http_auth_security_scheme.is_some(),
                ),
                (
                    "oauth2SecurityScheme",
                    repr.oauth2_security_scheme.is_some(),
                ),
                (
                    "openIdConnectSecurityScheme",
                    repr.open_id_connect_security_scheme.is_some(),
                ),
                ("mtlsSecurityScheme", repr.mtls_security_scheme.is_some()),
            ],
        )?;
        if let Some(r) = repr.api_key_security_scheme {
            Ok(SecurityScheme::ApiKeySecurityScheme {
                description: r.description,
                location: r.location,
                name: r.name,
            })
        } else if let Some(r) = repr.http_auth_security_scheme {
            Ok(SecurityScheme::HttpAuthSecurityScheme {
                description: r.description,
                scheme: r.scheme,
                bearer_format: r.bearer_format,
            })
        } else if let Some(r) = repr.oauth2_security_scheme {
            Ok(SecurityScheme::Oauth2SecurityScheme {
                description: r.description,
                flows: r.flows,
                oauth2_metadata_url: r.oauth2_metadata_url,
            })
        } else if let Some(r) = repr.open_id_connect_security_scheme {
            Ok(SecurityScheme::OpenIdConnectSecurityScheme {
                description: r.description,
                open_id_connect_url: r.open_id_connect_url,
            })
        } else {
            Ok(SecurityScheme::MtlsSecurityScheme {
                description: repr.mtls_security_scheme.and_then(|r| r.description),
            })
        }
    }
}

/// The OAuth 2.0 flow of an [`SecurityScheme::Oauth2SecurityScheme`], keyed by member name,
/// e.g. `{"clientCredentials":{"tokenUrl":"…","scopes":{}}}`. `scopes` is always serialized.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum OAuthFlows {
    /// Authorization code flow.
    AuthorizationCode {
        /// The authorization endpoint.
        authorization_url: String,
        /// The token endpoint.
        token_url: String,
        /// The refresh endpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refresh_url: Option<String>,
        /// Scope name to description.
        #[serde(default)]
        scopes: BTreeMap<String, String>,
        /// Whether PKCE is required.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pkce_required: Option<bool>,
    },
    /// Client credentials flow.
    ClientCredentials {
        /// The token endpoint.
        token_url: String,
        /// The refresh endpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refresh_url: Option<String>,
        /// Scope name to description.
        #[serde(default)]
        scopes: BTreeMap<String, String>,
    },
    /// Device authorization flow (RFC 8628).
    DeviceCode {
        /// The device authorization endpoint.
        device_authorization_url: String,
        /// The token endpoint.
        token_url: String,
        /// The refresh endpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refresh_url: Option<String>,
        /// Scope name to description.
        #[serde(default)]
        scopes: BTreeMap<String, String>,
    },
    /// Implicit flow (deprecated in the proto).
    Implicit {
        /// The authorization endpoint.
        authorization_url: String,
        /// The refresh endpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refresh_url: Option<String>,
        /// Scope name to description.
        #[serde(default)]
        scopes: BTreeMap<String, String>,
    },
    /// Resource owner password flow (deprecated in the proto).
    Password {
        /// The token endpoint.
        token_url: String,
        /// The refresh endpoint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refresh_url: Option<String>,
        /// Scope name to description.
        #[serde(default)]
        scopes: BTreeMap<String, String>,
    },
}

/// The reading shape of [`OAuthFlows`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OAuthFlowsRepr {
    #[serde(default, alias = "authorization_code")]
    authorization_code: Option<FlowRepr>,
    #[serde(default, alias = "client_credentials")]
    client_credentials: Option<FlowRepr>,
    #[serde(default, alias = "device_code")]
    device_code: Option<FlowRepr>,
    #[serde(default)]
    implicit: Option<FlowRepr>,
    #[serde(default)]
    password: Option<FlowRepr>,
}

/// Any flow body; which URLs are required depends on the flow.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FlowRepr {
    #[serde(default, alias = "authorization_url")]
    authorization_url: Option<String>,
    #[serde(default, alias = "device_authorization_url")]
    device_authorization_url: Option<String>,
    #[serde(default, alias = "token_url")]
    token_url: Option<String>,
    #[serde(default, alias = "refresh_url")]
    refresh_url: Option<String>,
    #[serde(default)]
    scopes: BTreeMap<String, String>,
    #[serde(default, alias = "pkce_required")]
    pkce_required: Option<bool>,
}

/// The value of a required flow URL, or an error naming it.
fn required(flow: &str, field: &str, value: Option<String>) -> Result<String, String> {
    value.ok_or_else(|| format!("missing field `{field}` in `{flow}`"))
}

/// Reads by member name; exactly one member, unknown keys ignored.
impl<'de> Deserialize<'de> for OAuthFlows {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        via_repr::<D, OAuthFlowsRepr, Self>(deserializer, "an OAuth flows object")
    }
}

impl TryFrom<OAuthFlowsRepr> for OAuthFlows {
    type Error = String;

    fn try_from(repr: OAuthFlowsRepr) -> Result<Self, String> {
        exactly_one(
            "OAuth flows",
            &[
                ("authorizationCode", repr.authorization_code.is_some()),
                ("clientCredentials", repr.client_credentials.is_some()),
                ("deviceCode", repr.device_code.is_some()),
                ("implicit", repr.implicit.is_some()),
                ("password", repr.password.is_some()),
            ],
        )?;
        if let Some(f) = repr.authorization_code {
            let flow = "authorizationCode";
            Ok(OAuthFlows::AuthorizationCode {
                authorization_url: required(flow, "authorizationUrl", f.authorization_url)?,
                token_url: required(flow, "tokenUrl", f.token_url)?,
                refresh_url: f.refresh_url,
                scopes: f.scopes,
                pkce_required: f.pkce_required,
            })
        } else if let Some(f) = repr.client_credentials {
            Ok(OAuthFlows::ClientCredentials {
                token_url: required("clientCredentials", "tokenUrl", f.token_url)?,
                refresh_url: f.refresh_url,
                scopes: f.scopes,
            })
        } else if let Some(f) = repr.device_code {
            let flow = "deviceCode";
            Ok(OAuthFlows::DeviceCode {
                device_authorization_url: required(
                    flow,
                    "deviceAuthorizationUrl",
                    f.device_authorization_url,
                )?,
                token_url: required(flow, "tokenUrl", f.token_url)?,
                refresh_url: f.refresh_url,
                scopes: f.scopes,
            })
        } else if let Some(f) = repr.implicit {
            Ok(OAuthFlows::Implicit {
                authorization_url: required("implicit", "authorizationUrl", f.authorization_url)?,
                refresh_url: f.refresh_url,
                scopes: f.scopes,
            })
        } else if let Some(f) = repr.password {
            Ok(OAuthFlows::Password {
                token_url: required("password", "tokenUrl", f.token_url)?,
                refresh_url: f.refresh_url,
                scopes: f.scopes,
            })
        } else {
            Err("OAuth flows need a member".to_owned())
        }
    }
}

/// One alternative of a card's or skill's security: all of these schemes, each with its scopes.
/// A list of requirements is an OR of these ANDs. JSON: `{"schemes":{"bearer":{"list":[]}}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityRequirement {
    /// Scheme name (a key of `securitySchemes`) to required scopes (always serialized).
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
}

/// A list of strings wrapped in an object, as proto maps of repeated values need.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// The strings (always serialized).
    #[serde(default)]
    pub list: Vec<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_scheme_round_trips() {
        for json in [
            r#"{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}}"#,
            r#"{"httpAuthSecurityScheme":{"description":"d","scheme":"Bearer","bearerFormat":"JWT"}}"#,
            r#"{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"tokenUrl":"https://a/token","scopes":{"a2a":"invoke"}}},"oauth2MetadataUrl":"https://a/.well-known/oauth-authorization-server"}}"#,
            r#"{"openIdConnectSecurityScheme":{"openIdConnectUrl":"https://a/.well-known/openid-configuration"}}"#,
            r#"{"mtlsSecurityScheme":{}}"#,
            r#"{"mtlsSecurityScheme":{"description":"m"}}"#,
        ] {
            let scheme: SecurityScheme = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&scheme).unwrap(), json);
        }
    }

    #[test]
    fn every_flow_round_trips() {
        for json in [
            r#"{"authorizationCode":{"authorizationUrl":"a","tokenUrl":"t","refreshUrl":"r","scopes":{"s":"d"},"pkceRequired":true}}"#,
            r#"{"clientCredentials":{"tokenUrl":"t","scopes":{}}}"#,
            r#"{"deviceCode":{"deviceAuthorizationUrl":"d","tokenUrl":"t","scopes":{}}}"#,
            r#"{"implicit":{"authorizationUrl":"a","scopes":{}}}"#,
            r#"{"password":{"tokenUrl":"t","refreshUrl":"r","scopes":{}}}"#,
        ] {
            let flows: OAuthFlows = serde_json::from_str(json).unwrap();
            assert_eq!(serde_json::to_string(&flows).unwrap(), json);
        }
        let err = serde_json::from_value::<OAuthFlows>(json!({"deviceCode": {"tokenUrl": "t"}}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing field `deviceAuthorizationUrl` in `deviceCode`"
        );
    }

    #[test]
    fn dual_version_and_snake_case_schemes_parse() {
        // a2a-sdk 1.3.0 dual-version cards put the 0.3 shape beside the 1.0 member.
        let scheme: SecurityScheme = serde_json::from_value(json!({
            "httpAuthSecurityScheme": {"scheme": "Bearer"}, "type": "http", "scheme": "Bearer"
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&scheme).unwrap(),
            r#"{"httpAuthSecurityScheme":{"scheme":"Bearer"}}"#
        );
        let scheme: SecurityScheme = serde_json::from_value(json!({
            "oauth2_security_scheme": {"flows": {"authorization_code": {
                "authorization_url": "a", "token_url": "t", "pkce_required": false}}}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&scheme).unwrap(),
            r#"{"oauth2SecurityScheme":{"flows":{"authorizationCode":{"authorizationUrl":"a","tokenUrl":"t","scopes":{},"pkceRequired":false}}}}"#
        );
    }

    #[test]
    fn zero_or_two_schemes_are_rejected() {
        let err = serde_json::from_value::<SecurityScheme>(json!({"type": "http"})).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("a security scheme needs exactly one of"),
            "{err}"
        );
        let err = serde_json::from_value::<SecurityScheme>(json!({
            "mtlsSecurityScheme": {}, "httpAuthSecurityScheme": {"scheme": "Basic"}
        }))
        .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("found `httpAuthSecurityScheme` and `mtlsSecurityScheme`")
        );
    }

    #[test]
    fn requirements_round_trip() {
        let json = r#"{"schemes":{"bearer":{"list":[]},"oauth":{"list":["read","write"]}}}"#;
        let requirement: SecurityRequirement = serde_json::from_str(json).unwrap();
        assert_eq!(requirement.schemes["oauth"].list, ["read", "write"]);
        assert_eq!(serde_json::to_string(&requirement).unwrap(), json);
        assert_eq!(
            serde_json::to_string(&SecurityRequirement::default()).unwrap(),
            r#"{"schemes":{}}"#
        );
    }
}
