// ES module entry: the same objects as the CommonJS one (index.js).
import agentlog from './index.js';

export const {
  AgentlogError,
  errorKinds,
  openLog,
  Log,
  Bridge,
  Worker,
  TaskContext,
  serve,
  Server,
  EventStream,
  RpcFrames,
  McpBridge,
  McpReply,
  ToolCall,
  verifyNotification,
  wire,
} = agentlog;
export default agentlog;
