/** The agent CLIs of spec 04: off until enabled in config, because they run third-party binaries. */
export const AGENT_CLI_KEYS = ['claude', 'codex', 'gemini', 'qwen', 'opencode'] as const;
/** One agent CLI's key, as the config and the runner profiles name it. */
export type AgentCliKey = (typeof AGENT_CLI_KEYS)[number];
