//! Every A2A error over gRPC: its status code and its `ErrorInfo` (the reason, and what names
//! the refused thing).

use super::*;

#[tokio::test]
async fn every_a2a_error_has_its_code_and_error_info() {
    let server = start(None).await;
    let mut c = client(&server).await;
    let missing = c
        .get_task(req(get("nope", None), &[]))
        .await
        .expect_err("missing");
    assert_eq!(refusal(&missing), (Code::NotFound, "TASK_NOT_FOUND".into()));
    assert_eq!(
        missing.get_details_error_info().expect("info").metadata["taskId"],
        "nope"
    );
    let subscribe = pb::SubscribeToTaskRequest {
        id: "nope".into(),
        ..Default::default()
    };
    let unknown = c
        .subscribe_to_task(req(subscribe, &[]))
        .await
        .expect_err("missing");
    assert_eq!(refusal(&unknown).0, Code::NotFound);

    let push = pb::TaskPushNotificationConfig {
        task_id: "t".into(),
        url: "https://h/cb".into(),
        ..Default::default()
    };
    let refused = c
        .create_task_push_notification_config(req(push, &[]))
        .await
        .expect_err("push");
    assert_eq!(
        refusal(&refused),
        (
            Code::FailedPrecondition,
            "PUSH_NOTIFICATION_NOT_SUPPORTED".into()
        )
    );
    let list = pb::ListTaskPushNotificationConfigsRequest {
        task_id: "t".into(),
        ..Default::default()
    };
    let refused = c
        .list_task_push_notification_configs(req(list, &[]))
        .await
        .expect_err("push");
    assert_eq!(refusal(&refused).0, Code::FailedPrecondition);

    let card = c
        .get_extended_agent_card(req(pb::GetExtendedAgentCardRequest::default(), &[]))
        .await
        .expect_err("none configured");
    assert_eq!(
        refusal(&card),
        (
            Code::FailedPrecondition,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED".into()
        )
    );

    let done = task_of(
        c.send_message(req(send("e-1", "hi", false), &[]))
            .await
            .expect("send")
            .into_inner(),
    );
    let follow_up = {
        let mut request = send("e-2", "more", false);
        if let Some(m) = request.message.as_mut() {
            m.task_id = done.id.clone();
        }
        request
    };
    let terminal = c
        .send_message(req(follow_up, &[]))
        .await
        .expect_err("terminal");
    assert_eq!(
        refusal(&terminal),
        (Code::FailedPrecondition, "UNSUPPORTED_OPERATION".into())
    );

    let mut image = send("e-3", "x", false);
    if let Some(m) = image.message.as_mut() {
        m.parts[0].media_type = "image/png".into();
    }
    let media = c
        .send_message(req(image, &[]))
        .await
        .expect_err("media type");
    assert_eq!(
        refusal(&media),
        (Code::InvalidArgument, "CONTENT_TYPE_NOT_SUPPORTED".into())
    );

    let mut agent = send("e-4", "x", false);
    if let Some(m) = agent.message.as_mut() {
        m.role = pb::Role::Agent.into();
    }
    let invalid = c.send_message(req(agent, &[])).await.expect_err("role");
    assert_eq!(
        refusal(&invalid),
        (Code::InvalidArgument, "INVALID_PARAMS".into())
    );
    let field = &invalid
        .get_details_bad_request()
        .expect("a BadRequest")
        .field_violations[0];
    assert_eq!(field.field, "message.role");
    let no_part = pb::SendMessageRequest {
        message: Some(pb::Message {
            parts: vec![pb::Part::default()],
            ..message("e-5", "x")
        }),
        ..Default::default()
    };
    let malformed = c
        .send_message(req(no_part, &[]))
        .await
        .expect_err("no content");
    assert_eq!(refusal(&malformed).0, Code::InvalidArgument);

    let required = c
        .send_message(req(send("ext-1", "hi", false), &[]))
        .await
        .expect_err("extension");
    assert_eq!(
        refusal(&required),
        (
            Code::FailedPrecondition,
            "EXTENSION_SUPPORT_REQUIRED".into()
        )
    );
    // Activated: served, and echoed in the trailer.
    let activated = c
        .send_message(req(
            send("ext-2", "hi", false),
            &[("a2a-extensions", "urn:other, urn:agentlog:test:required")],
        ))
        .await
        .expect("activated");
    assert_eq!(
        activated.metadata().get("a2a-extensions").expect("echoed"),
        REQUIRED
    );

    // A version not served, and none at all (0.3).
    let future = c
        .get_task(req(get("nope", None), &[("a2a-version", "99.0")]))
        .await
        .expect_err("version");
    assert_eq!(
        refusal(&future),
        (Code::FailedPrecondition, "VERSION_NOT_SUPPORTED".into())
    );
    let unversioned = c
        .get_task(tonic::Request::new(get("nope", None)))
        .await
        .expect_err("0.3");
    assert_eq!(
        refusal(&unversioned),
        (Code::FailedPrecondition, "VERSION_NOT_SUPPORTED".into())
    );

    // The body limit, before anything is decoded.
    let huge = send("e-6", &"x".repeat(2 * 1024 * 1024), false);
    let too_big = c.send_message(req(huge, &[])).await.expect_err("too big");
    assert!(
        matches!(too_big.code(), Code::ResourceExhausted | Code::OutOfRange),
        "{too_big:?}"
    );
}
