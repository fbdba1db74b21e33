//! The rmcp peer: a stateless streamable-HTTP server answering JSON (no sessions, no SSE)
//! with the demo's `greet` tool at `/mcp`. Prints its URL, as `agentlog serve` does.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};

#[derive(Debug, Clone)]
struct Greeter {
    #[expect(dead_code, reason = "the tool_handler macro reads it")]
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    name: Option<String>,
}

#[tool_router]
impl Greeter {
    #[tool(description = "Greets by name")]
    async fn greet(&self, Parameters(GreetArgs { name }): Parameters<GreetArgs>) -> String {
        format!("Hello, {}!", name.as_deref().unwrap_or("world"))
    }
}

#[tool_handler]
impl ServerHandler for Greeter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service: StreamableHttpService<Greeter, LocalSessionManager> = StreamableHttpService::new(
        || {
            Ok(Greeter {
                tool_router: Greeter::tool_router(),
            })
        },
        Default::default(),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("rmcp greet server on http://{}/", listener.local_addr()?);
    axum::serve(listener, router).await
}
