//! The agent card and its security schemes.

use agentlog_wire::a2a::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, OAuthFlows, SecurityRequirement, SecurityScheme, StringList,
};

use super::{metadata_from, metadata_to, optional, required, text};
use crate::error::{Error, Result};
use crate::grpc::proto as pb;

impl From<AgentCard> for pb::AgentCard {
    fn from(c: AgentCard) -> Self {
        pb::AgentCard {
            name: c.name,
            description: c.description,
            supported_interfaces: c.supported_interfaces.into_iter().map(Into::into).collect(),
            provider: c.provider.map(Into::into),
            version: c.version,
            documentation_url: c.documentation_url,
            capabilities: Some(c.capabilities.into()),
            security_schemes: c
                .security_schemes
                .into_iter()
                .map(|(k, v)| (k, v.into()))
                .collect(),
            security_requirements: c
                .security_requirements
                .into_iter()
                .map(Into::into)
                .collect(),
            default_input_modes: c.default_input_modes,
            default_output_modes: c.default_output_modes,
            skills: c.skills.into_iter().map(Into::into).collect(),
            signatures: c.signatures.into_iter().map(Into::into).collect(),
            icon_url: c.icon_url,
        }
    }
}

impl TryFrom<pb::AgentCard> for AgentCard {
    type Error = Error;

    fn try_from(c: pb::AgentCard) -> Result<Self> {
        Ok(AgentCard {
            name: c.name,
            description: c.description,
            version: c.version,
            supported_interfaces: c.supported_interfaces.into_iter().map(Into::into).collect(),
            provider: c.provider.map(Into::into),
            documentation_url: c.documentation_url,
            icon_url: c.icon_url,
            capabilities: c
                .capabilities
                .map(TryInto::try_into)
                .transpose()?
                .unwrap_or_default(),
            security_schemes: c
                .security_schemes
                .into_iter()
                .map(|(k, v)| Ok((k, v.try_into()?)))
                .collect::<Result<_>>()?,
            security_requirements: c
                .security_requirements
                .into_iter()
                .map(Into::into)
                .collect(),
            default_input_modes: c.default_input_modes,
            default_output_modes: c.default_output_modes,
            skills: c.skills.into_iter().map(Into::into).collect(),
            signatures: c
                .signatures
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
        })
    }
}

impl From<AgentInterface> for pb::AgentInterface {
    fn from(i: AgentInterface) -> Self {
        pb::AgentInterface {
            url: i.url,
            protocol_binding: i.protocol_binding,
            tenant: text(i.tenant),
            protocol_version: i.protocol_version,
        }
    }
}

impl From<pb::AgentInterface> for AgentInterface {
    fn from(i: pb::AgentInterface) -> Self {
        AgentInterface {
            url: i.url,
            protocol_binding: i.protocol_binding,
            protocol_version: i.protocol_version,
            tenant: optional(i.tenant),
        }
    }
}

impl From<AgentProvider> for pb::AgentProvider {
    fn from(p: AgentProvider) -> Self {
        pb::AgentProvider {
            url: p.url,
            organization: p.organization,
        }
    }
}

impl From<pb::AgentProvider> for AgentProvider {
    fn from(p: pb::AgentProvider) -> Self {
        AgentProvider {
            url: p.url,
            organization: p.organization,
        }
    }
}

impl From<AgentCapabilities> for pb::AgentCapabilities {
    fn from(c: AgentCapabilities) -> Self {
        pb::AgentCapabilities {
            streaming: c.streaming,
            push_notifications: c.push_notifications,
            extensions: c.extensions.into_iter().map(Into::into).collect(),
            extended_agent_card: c.extended_agent_card,
        }
    }
}

impl TryFrom<pb::AgentCapabilities> for AgentCapabilities {
    type Error = Error;

    fn try_from(c: pb::AgentCapabilities) -> Result<Self> {
        Ok(AgentCapabilities {
            streaming: c.streaming,
            push_notifications: c.push_notifications,
            extensions: c
                .extensions
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            extended_agent_card: c.extended_agent_card,
        })
    }
}

impl From<AgentExtension> for pb::AgentExtension {
    fn from(e: AgentExtension) -> Self {
        pb::AgentExtension {
            uri: e.uri,
            description: text(e.description),
            required: e.required,
            params: metadata_to(e.params),
        }
    }
}

impl TryFrom<pb::AgentExtension> for AgentExtension {
    type Error = Error;

    fn try_from(e: pb::AgentExtension) -> Result<Self> {
        Ok(AgentExtension {
            uri: e.uri,
            description: optional(e.description),
            required: e.required,
            params: metadata_from("AgentExtension.params", e.params)?,
        })
    }
}

impl From<AgentSkill> for pb::AgentSkill {
    fn from(s: AgentSkill) -> Self {
        pb::AgentSkill {
            id: s.id,
            name: s.name,
            description: s.description,
            tags: s.tags,
            examples: s.examples,
            input_modes: s.input_modes,
            output_modes: s.output_modes,
            security_requirements: s
                .security_requirements
                .into_iter()
                .map(Into::into)
                .collect(),
        }
    }
}

impl From<pb::AgentSkill> for AgentSkill {
    fn from(s: pb::AgentSkill) -> Self {
        AgentSkill {
            id: s.id,
            name: s.name,
            description: s.description,
            tags: s.tags,
            examples: s.examples,
            input_modes: s.input_modes,
            output_modes: s.output_modes,
            security_requirements: s
                .security_requirements
                .into_iter()
                .map(Into::into)
                .collect(),
        }
    }
}

impl From<AgentCardSignature> for pb::AgentCardSignature {
    fn from(s: AgentCardSignature) -> Self {
        pb::AgentCardSignature {
            protected: s.protected,
            signature: s.signature,
            header: metadata_to(s.header),
        }
    }
}

impl TryFrom<pb::AgentCardSignature> for AgentCardSignature {
    type Error = Error;

    fn try_from(s: pb::AgentCardSignature) -> Result<Self> {
        Ok(AgentCardSignature {
            protected: s.protected,
            signature: s.signature,
            header: metadata_from("AgentCardSignature.header", s.header)?,
        })
    }
}

impl From<SecurityRequirement> for pb::SecurityRequirement {
    fn from(r: SecurityRequirement) -> Self {
        pb::SecurityRequirement {
            schemes: r
                .schemes
                .into_iter()
                .map(|(k, v)| (k, pb::StringList { list: v.list }))
                .collect(),
        }
    }
}

impl From<pb::SecurityRequirement> for SecurityRequirement {
    fn from(r: pb::SecurityRequirement) -> Self {
        SecurityRequirement {
            schemes: r
                .schemes
                .into_iter()
                .map(|(k, v)| (k, StringList { list: v.list }))
                .collect(),
        }
    }
}

impl From<SecurityScheme> for pb::SecurityScheme {
    fn from(s: SecurityScheme) -> Self {
        use pb::security_scheme::Scheme;
        let scheme = match s {
            SecurityScheme::ApiKeySecurityScheme {
                description,
                location,
                name,
            } => Scheme::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
                description: text(description),
                location,
                name,
            }),
            SecurityScheme::HttpAuthSecurityScheme {
                description,
                scheme,
                bearer_format,
            } => Scheme::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
                description: text(description),
                scheme,
                bearer_format: text(bearer_format),
            }),
            SecurityScheme::Oauth2SecurityScheme {
                description,
                flows,
                oauth2_metadata_url,
            } => Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
                description: text(description),
                flows: Some(flows.into()),
                oauth2_metadata_url: text(oauth2_metadata_url),
            }),
            SecurityScheme::OpenIdConnectSecurityScheme {
                description,
                open_id_connect_url,
            } => Scheme::OpenIdConnectSecurityScheme(pb::OpenIdConnectSecurityScheme {
                description: text(description),
                open_id_connect_url,
            }),
            SecurityScheme::MtlsSecurityScheme { description } => {
                Scheme::MtlsSecurityScheme(pb::MutualTlsSecurityScheme {
                    description: text(description),
                })
            }
        };
        pb::SecurityScheme {
            scheme: Some(scheme),
        }
    }
}

impl TryFrom<pb::SecurityScheme> for SecurityScheme {
    type Error = Error;

    fn try_from(s: pb::SecurityScheme) -> Result<Self> {
        use pb::security_scheme::Scheme;
        Ok(match required("SecurityScheme.scheme", s.scheme)? {
            Scheme::ApiKeySecurityScheme(s) => SecurityScheme::ApiKeySecurityScheme {
                description: optional(s.description),
                location: s.location,
                name: s.name,
            },
            Scheme::HttpAuthSecurityScheme(s) => SecurityScheme::HttpAuthSecurityScheme {
                description: optional(s.description),
                scheme: s.scheme,
                bearer_format: optional(s.bearer_format),
            },
            Scheme::Oauth2SecurityScheme(s) => SecurityScheme::Oauth2SecurityScheme {
                description: optional(s.description),
                flows: required("OAuth2SecurityScheme.flows", s.flows)?.try_into()?,
                oauth2_metadata_url: optional(s.oauth2_metadata_url),
            },
            Scheme::OpenIdConnectSecurityScheme(s) => SecurityScheme::OpenIdConnectSecurityScheme {
                description: optional(s.description),
                open_id_connect_url: s.open_id_connect_url,
            },
            Scheme::MtlsSecurityScheme(s) => SecurityScheme::MtlsSecurityScheme {
                description: optional(s.description),
            },
        })
    }
}

// The implicit and password flows are deprecated in the proto, still carried both ways.
#[allow(deprecated)]
impl From<OAuthFlows> for pb::OAuthFlows {
    fn from(f: OAuthFlows) -> Self {
        use pb::o_auth_flows::Flow;
        let flow = match f {
            OAuthFlows::AuthorizationCode {
                authorization_url,
                token_url,
                refresh_url,
                scopes,
                pkce_required,
            } => Flow::AuthorizationCode(pb::AuthorizationCodeOAuthFlow {
                authorization_url,
                token_url,
                refresh_url: text(refresh_url),
                scopes: scopes.into_iter().collect(),
                pkce_required: pkce_required.unwrap_or_default(),
            }),
            OAuthFlows::ClientCredentials {
                token_url,
                refresh_url,
                scopes,
            } => Flow::ClientCredentials(pb::ClientCredentialsOAuthFlow {
                token_url,
                refresh_url: text(refresh_url),
                scopes: scopes.into_iter().collect(),
            }),
            OAuthFlows::DeviceCode {
                device_authorization_url,
                token_url,
                refresh_url,
                scopes,
            } => Flow::DeviceCode(pb::DeviceCodeOAuthFlow {
                device_authorization_url,
                token_url,
                refresh_url: text(refresh_url),
                scopes: scopes.into_iter().collect(),
            }),
            OAuthFlows::Implicit {
                authorization_url,
                refresh_url,
                scopes,
            } => Flow::Implicit(pb::ImplicitOAuthFlow {
                authorization_url,
                refresh_url: text(refresh_url),
                scopes: scopes.into_iter().collect(),
            }),
            OAuthFlows::Password {
                token_url,
                refresh_url,
                scopes,
            } => Flow::Password(pb::PasswordOAuthFlow {
                token_url,
                refresh_url: text(refresh_url),
                scopes: scopes.into_iter().collect(),
            }),
        };
        pb::OAuthFlows { flow: Some(flow) }
    }
}

#[allow(deprecated)]
impl TryFrom<pb::OAuthFlows> for OAuthFlows {
    type Error = Error;

    fn try_from(f: pb::OAuthFlows) -> Result<Self> {
        use pb::o_auth_flows::Flow;
        Ok(match required("OAuthFlows.flow", f.flow)? {
            Flow::AuthorizationCode(f) => OAuthFlows::AuthorizationCode {
                authorization_url: f.authorization_url,
                token_url: f.token_url,
                refresh_url: optional(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
                pkce_required: f.pkce_required.then_some(true),
            },
            Flow::ClientCredentials(f) => OAuthFlows::ClientCredentials {
                token_url: f.token_url,
                refresh_url: optional(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            },
            Flow::DeviceCode(f) => OAuthFlows::DeviceCode {
                device_authorization_url: f.device_authorization_url,
                token_url: f.token_url,
                refresh_url: optional(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            },
            Flow::Implicit(f) => OAuthFlows::Implicit {
                authorization_url: f.authorization_url,
                refresh_url: optional(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            },
            Flow::Password(f) => OAuthFlows::Password {
                token_url: f.token_url,
                refresh_url: optional(f.refresh_url),
                scopes: f.scopes.into_iter().collect(),
            },
        })
    }
}
