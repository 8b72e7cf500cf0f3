/** The agent runtime's AgentService, injected into the agent server's controllers. */
export const AGENT_SERVICE = Symbol('AGENT_SERVICE');
