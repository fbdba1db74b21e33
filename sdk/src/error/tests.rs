use super::*;

#[test]
fn every_kind_has_a_unique_name() {
    let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ErrorKind::ALL.len());
}

#[test]
fn clients_get_no_paths_offsets_or_causes() {
    let cause = std::io::Error::other("disk says no at /var/lib/agentlog/x.seg");
    let corrupt = Error::new(
        ErrorKind::Corrupt,
        "record at /var/lib/agentlog/s/t/0/00000000000000000000.seg byte 4096",
    )
    .with_source(cause);
    let rpc = corrupt.to_rpc();
    let meta = |rpc: &agentlog_wire::RpcError, key: &str| {
        rpc.metadata
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let shown = rpc.to_json_v1().to_string();
    assert!(
        !shown.contains("/var/lib") && !shown.contains("4096"),
        "{shown}"
    );
    let id = meta(&rpc, "errorId").unwrap_or_default();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{shown}");
    assert!(rpc.message.contains(&id), "{shown}");
    assert_eq!(meta(&rpc, "kind").as_deref(), Some("corrupt"));
    // A request's own fault keeps its message (written for the client), not its cause.
    let invalid = Error::new(
        ErrorKind::InvalidParams,
        "pageSize must be between 1 and 100",
    )
    .with_source(std::io::Error::other("an internal cause"))
    .with_detail("field", "pageSize");
    let rpc = invalid.to_rpc();
    assert_eq!(rpc.message, "pageSize must be between 1 and 100");
    assert_eq!(meta(&rpc, "field").as_deref(), Some("pageSize"));
    assert_eq!(meta(&rpc, "errorId"), None);
}

#[test]
fn protocol_kinds_map_to_their_a2a_codes() {
    assert_eq!(ErrorKind::TaskNotFound.info().rpc.code(), -32001);
    assert_eq!(ErrorKind::TaskNotCancelable.info().rpc.code(), -32002);
    assert_eq!(ErrorKind::UnsupportedOperation.info().rpc.code(), -32004);
    assert_eq!(ErrorKind::VersionNotSupported.info().rpc.code(), -32009);
    assert_eq!(ErrorKind::Parse.info().rpc.code(), -32700);
    assert_eq!(ErrorKind::Unauthenticated.info().rpc.code(), -31401);
    assert_eq!(ErrorKind::Unauthenticated.info().http_status, 401);
    assert_eq!(ErrorKind::PermissionDenied.info().http_status, 403);
    assert_eq!(
        ErrorKind::ExtendedAgentCardNotConfigured.info().rpc.code(),
        -32007
    );
    assert_eq!(
        ErrorKind::ExtensionSupportRequired.info().rpc.code(),
        -32008
    );
    assert!(ErrorKind::Unavailable.info().retryable);
    assert!(!ErrorKind::Corrupt.info().retryable);
}

#[test]
fn mcp_codes_stay_out_of_the_reserved_range() {
    for kind in ErrorKind::ALL {
        let code = kind.info().mcp;
        let json_rpc = (-32700..=-32600).contains(&code);
        assert!(
            json_rpc || (-32022..=-32020).contains(&code),
            "{kind}: {code}"
        );
    }
    assert_eq!(ErrorKind::TaskNotFound.info().mcp, -32602);
    assert_eq!(ErrorKind::MethodNotFound.info().mcp, -32601);
    let error = Error::new(ErrorKind::VersionNotSupported, "no")
        .with_data(serde_json::json!({"supported": ["2026-07-28"], "requested": "x"}));
    let json = error.to_mcp();
    assert_eq!(json["code"], -32022);
    assert_eq!(json["data"]["requested"], "x");
    let json = Error::new(ErrorKind::InvalidParams, "bad")
        .with_detail("field", "name")
        .to_mcp();
    assert_eq!(
        json,
        serde_json::json!({"code": -32602, "message": "bad", "data": {"field": "name"}})
    );
}

#[test]
fn mcp_statuses_follow_each_eras_transport() {
    let statuses = |kind: ErrorKind| (kind.info().mcp_status, kind.info().mcp_legacy_status);
    // Not a request at all: 400 in both eras.
    assert_eq!(statuses(ErrorKind::Parse), (400, 400));
    assert_eq!(statuses(ErrorKind::InvalidRequest), (400, 400));
    // The modern transport's table; a legacy client reads these on 200.
    assert_eq!(statuses(ErrorKind::InvalidParams), (400, 200));
    assert_eq!(statuses(ErrorKind::TaskNotFound), (400, 200));
    assert_eq!(statuses(ErrorKind::HeaderMismatch), (400, 200));
    assert_eq!(statuses(ErrorKind::ExtensionSupportRequired), (400, 200));
    assert_eq!(statuses(ErrorKind::VersionNotSupported), (400, 200));
    assert_eq!(statuses(ErrorKind::MethodNotFound), (404, 200));
    assert_eq!(statuses(ErrorKind::ToolFailed), (200, 200));
    assert_eq!(statuses(ErrorKind::Internal), (200, 200));
}

#[test]
fn data_fields_join_the_details() {
    let json = Error::new(ErrorKind::ToolFailed, "the tool failed: no")
        .with_data_field(
            "io.modelcontextprotocol/related-task",
            serde_json::json!({"taskId": "t"}),
        )
        .to_mcp();
    assert_eq!(
        json,
        serde_json::json!({"code": -32603, "message": "the tool failed: no", "data": {
            "kind": "tool_failed",
            "io.modelcontextprotocol/related-task": {"taskId": "t"},
        }})
    );
}

#[test]
fn display_is_the_message_and_report_the_chain() {
    let cause = std::io::Error::other("disk full");
    let error = Error::new(ErrorKind::Unavailable, "cannot append").with_source(cause);
    assert_eq!(error.to_string(), "cannot append");
    let source = std::error::Error::source(&error).map(ToString::to_string);
    assert_eq!(source.as_deref(), Some("disk full"));
    assert_eq!(error.report().to_string(), "cannot append: disk full");
    let outer = Error::new(ErrorKind::Config, "cannot open").with_source(error);
    assert_eq!(
        outer.report().to_string(),
        "cannot open: cannot append: disk full"
    );
}

#[test]
fn every_kind_survives_its_json_rpc_error() {
    for kind in ErrorKind::ALL {
        let rpc = Error::new(kind, "x").to_rpc();
        let named = rpc.metadata.get("kind").and_then(|k| k.as_str());
        assert_eq!(ErrorKind::from_rpc(rpc.code, named), kind, "{kind}");
    }
    assert_eq!(
        ErrorKind::from_rpc(ErrorCode::TaskNotFound, Some("bogus")),
        ErrorKind::TaskNotFound
    );
}

#[test]
fn every_kind_has_a_grpc_code_and_a2a_errors_the_specs() {
    let grpc = |kind: ErrorKind| kind.info().grpc;
    assert_eq!(grpc(ErrorKind::TaskNotFound), GrpcCode::NotFound);
    assert_eq!(
        grpc(ErrorKind::TaskNotCancelable),
        GrpcCode::FailedPrecondition
    );
    assert_eq!(
        grpc(ErrorKind::PushNotificationNotSupported),
        GrpcCode::FailedPrecondition
    );
    assert_eq!(
        grpc(ErrorKind::ContentTypeNotSupported),
        GrpcCode::InvalidArgument
    );
    assert_eq!(grpc(ErrorKind::Unauthenticated), GrpcCode::Unauthenticated);
    assert_eq!(
        grpc(ErrorKind::PermissionDenied),
        GrpcCode::PermissionDenied
    );
    assert_eq!(grpc(ErrorKind::Unavailable), GrpcCode::Unavailable);
}
