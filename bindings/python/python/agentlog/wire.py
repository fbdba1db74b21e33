"""The agentlog contract (the ``agentlog-wire`` crate) over plain data: records and their
encoding, task states and their pinned codes, JSON-RPC parsing and error bodies, the fold,
the derived ids, membership records and their fold, 0.3 conversions, card payloads and signatures. ``fixtures/README.md`` in
the repository describes the JSON forms; the tests run every fixture vector through these.
"""

from ._agentlog import WireError
from ._agentlog import wire as _wire

state = _wire.state
state_code = _wire.state_code
can_transition = _wire.can_transition
encode_record = _wire.encode_record
decode_record = _wire.decode_record
signing_payload = _wire.signing_payload
record_verdict = _wire.record_verdict
encode_member_record = _wire.encode_member_record
decode_member_record = _wire.decode_member_record
member_signing_payload = _wire.member_signing_payload
fold_members = _wire.fold_members
parse_rpc_request = _wire.parse_rpc_request
protocol_version = _wire.protocol_version
error_response = _wire.error_response
fold = _wire.fold
task_id = _wire.task_id
context_id = _wire.context_id
record_id = _wire.record_id
send_params_from_v03 = _wire.send_params_from_v03
task_to_v03 = _wire.task_to_v03
task_from_v03 = _wire.task_from_v03
card_payload = _wire.card_payload
canonicalize = _wire.canonicalize
decode_protected_header = _wire.decode_protected_header
encode_protected_header = _wire.encode_protected_header
signing_input = _wire.signing_input
verify_card_signature = _wire.verify_card_signature
card_signature = _wire.card_signature

__all__ = [
    "WireError",
    "can_transition",
    "canonicalize",
    "card_payload",
    "card_signature",
    "context_id",
    "decode_member_record",
    "decode_protected_header",
    "decode_record",
    "encode_member_record",
    "encode_protected_header",
    "encode_record",
    "error_response",
    "fold",
    "fold_members",
    "member_signing_payload",
    "parse_rpc_request",
    "protocol_version",
    "record_id",
    "record_verdict",
    "send_params_from_v03",
    "signing_input",
    "signing_payload",
    "state",
    "state_code",
    "task_from_v03",
    "task_id",
    "task_to_v03",
    "verify_card_signature",
]
