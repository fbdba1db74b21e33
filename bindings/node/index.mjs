// ES module entry: the same objects as the CommonJS one (index.js).
import agentlog from './index.js';

export const { AgentlogError, errorKinds, openLog, Log, wire } = agentlog;
export default agentlog;
