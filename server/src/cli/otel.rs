//! OpenTelemetry export of `serve`, `worker`, `pusher` and the client commands (`send`,
//! `get`, `cancel`, `list`): the spans the library makes
//! (`agentlog::telemetry`) sent over OTLP/HTTP with protobuf, when the standard variables ask
//! for it.
//!
//! Exporting is on when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set (not empty), unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Without
//! them nothing is exported and no span is made. The SDK reads the rest itself: the sampler
//! (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`; default `parentbased_always_on`), the
//! resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; the service is `agentlog` when
//! neither names it), the exporter's headers, timeout and compression
//! (`OTEL_EXPORTER_OTLP_*`) and the batch processor (`OTEL_BSP_*`).

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

use super::{CliError, CliResult};

/// The tracer provider while exporting; flushed and shut down by [`Export::finish`].
#[derive(Debug)]
pub(super) struct Export {
    provider: Option<SdkTracerProvider>,
}

/// Start exporting if the environment asks for it; `command` names the subcommand (the
/// `agentlog.command` resource attribute).
pub(super) fn start(command: &'static str) -> CliResult<Export> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(Export { provider: None });
    }
    match var("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
        None | Some("otlp") => {}
        Some("none") => return Ok(Export { provider: None }),
        Some(other) => {
            return Err(CliError::msg(format!(
                "OTEL_TRACES_EXPORTER={other} is not supported: this build exports traces with \
                 otlp (or none)"
            )));
        }
    }
    let endpoint =
        var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
    if endpoint.is_none() {
        return Ok(Export { provider: None });
    }
    let protocol =
        var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
    if let Some(protocol) = protocol.as_deref().map(str::trim)
        && protocol != "http/protobuf"
    {
        return Err(CliError::msg(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported: this build exports \
             http/protobuf"
        )));
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| CliError::msg(format!("cannot export traces over OTLP: {e}")))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(command))
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    agentlog::telemetry::enable();
    // A server says so; a client command (`send`) keeps its stderr for what it was asked.
    if matches!(command, "serve" | "worker" | "pusher") {
        tracing::info!(target: "agentlog::cli", command, "exporting OpenTelemetry traces over OTLP/HTTP");
    }
    Ok(Export {
        provider: Some(provider),
    })
}

/// The resource: the environment's, with `agentlog` as the service when it names none.
fn resource(command: &'static str) -> Resource {
    let from_env = Resource::builder().build();
    let named = from_env
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let builder = Resource::builder().with_attributes([
        KeyValue::new("agentlog.command", command),
        KeyValue::new("process.pid", i64::from(std::process::id())),
    ]);
    let builder = if named {
        builder
    } else {
        builder.with_service_name("agentlog")
    };
    builder.build()
}

impl Export {
    /// Send what is left and stop (blocking: call it outside the runtime).
    pub(super) fn finish(self) {
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(target: "agentlog::cli", error = %error, "could not export the last spans");
        }
    }
}
