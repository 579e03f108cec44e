// The scripted model server for tests: real wire formats of four model APIs, answers from a per-test script.
export { ModelServer, startModelServer } from './server.js';
export type { HttpHit, ModelServerOptions } from './server.js';
export { sampleFromSchema } from './auto.js';
export type {
  AnsweredBy,
  ApiKind,
  AutoOptions,
  AutoTurn,
  DynamicTurn,
  ErrorSpec,
  ErrorTurn,
  ModelRequest,
  ReplyTurn,
  ScriptOptions,
  ScriptStep,
  StallTurn,
  ToolCallSpec,
  ToolResult,
  Turn,
  TurnBase,
} from './types.js';
export { OFFLINE_PORT, OFFLINE_RUN, offlineCommand, offlineSupport, offlineUrl } from './offline.js';
export type { CommandLine } from './offline.js';
