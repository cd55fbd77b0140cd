// ES module entry: the same objects as the CommonJS one.
import binding from './index.js';

export const {
  Workspace, Manager, Process, AgentSbxError, errorCodes, codeName, probeBackends, libraryInfo,
  hasFunction,
} = binding;
export default binding;
