//! OTLP export of the spans (feature `otlp`): what the `agentlog` command and the language
//! bindings start when the standard variables ask for it, one implementation for all.
//!
//! Exporting is on when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! is set (not empty), unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Without
//! them nothing is exported and no span is made. The SDK reads the rest itself: the sampler
//! (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`; default `parentbased_always_on`), the
//! resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; the service is `agentlog` when
//! neither names it), the exporter's headers, timeout and compression
//! (`OTEL_EXPORTER_OTLP_*`) and the batch processor (`OTEL_BSP_*`). Spans go over OTLP/HTTP
//! with protobuf, from a thread of the batch processor's own (a blocking client: no runtime
//! needed).

use opentelemetry::KeyValue;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::error::{Error, ErrorKind, Result};

/// The export a program started ([`Export::from_env`]): flush it before the program ends
/// ([`Export::finish`]); dropping it exports nothing more.
#[derive(Debug)]
pub struct Export {
    provider: Option<SdkTracerProvider>,
}

impl Export {
    /// Start exporting if the environment asks for it (and [`enable`](super::enable) spans),
    /// as program `program` (the resource attribute `agentlog.command`: `serve`, `worker`,
    /// `python`, ...). Asked for in a way this build cannot do (another exporter or protocol)
    /// is a [`ErrorKind::Config`] error saying why. Call it once, early: the tracer provider is
    /// the process's global one.
    pub fn from_env(program: &'static str) -> Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let off = Self { provider: None };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(off);
        }
        match var("OTEL_TRACES_EXPORTER").as_deref().map(str::trim) {
            None | Some("otlp") => {}
            Some("none") => return Ok(off),
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "OTEL_TRACES_EXPORTER={other} is not supported: this build exports \
                         traces with otlp (or none)"
                    ),
                ));
            }
        }
        let endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
        if endpoint.is_none() {
            return Ok(off);
        }
        let protocol = var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(protocol) = protocol.as_deref().map(str::trim)
            && protocol != "http/protobuf"
        {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported: this build \
                     exports http/protobuf"
                ),
            ));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| {
                Error::new(ErrorKind::Config, "cannot export traces over OTLP").with_source(e)
            })?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource(program))
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        super::enable();
        Ok(Self {
            provider: Some(provider),
        })
    }

    /// Whether spans are exported.
    pub fn is_exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Send the spans not sent yet and stop exporting. Blocking: call it outside an async
    /// runtime's threads (after the runtime stopped, or from a thread of its own).
    pub fn finish(self) -> Result<()> {
        match self.provider {
            Some(provider) => provider.shutdown().map_err(|e| {
                Error::new(ErrorKind::Unavailable, "could not export the last spans").with_source(e)
            }),
            None => Ok(()),
        }
    }
}

/// The resource: the environment's, with `agentlog` as the service when it names none.
fn resource(program: &'static str) -> Resource {
    let from_env = Resource::builder().build();
    let named = from_env
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let builder = Resource::builder().with_attributes([
        KeyValue::new("agentlog.command", program),
        KeyValue::new("process.pid", i64::from(std::process::id())),
    ]);
    let builder = if named {
        builder
    } else {
        builder.with_service_name("agentlog")
    };
    builder.build()
}
