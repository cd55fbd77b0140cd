'use strict';
// Error codes of the C library (enum sbx_error in agentsbx.h). Functions return their negation.

const CODES = Object.freeze({
  EPERM: 1, ENOENT: 2, EIO: 5, E2BIG: 7, EBADF: 9, ENOMEM: 12, EACCES: 13, EBUSY: 16,
  EEXIST: 17, ENOTDIR: 20, EISDIR: 21, EINVAL: 22, EFBIG: 27, ENOSPC: 28, ENAMETOOLONG: 36,
  ENOSYS: 38, ENOTEMPTY: 39, ELOOP: 40, ETIMEDOUT: 110,
  ECONFIG: 1001, EBACKEND: 1002, EESCAPE: 1003, EABI: 1004, EPROTO: 1005, ESTATE: 1006,
});

const NAMES = new Map(Object.entries(CODES).map(([name, value]) => [value, name]));

/** 'ECONFIG' for -1001 or 1001; undefined for a code the library does not define. */
function codeName(code) {
  return NAMES.get(Math.abs(code));
}

/**
 * A failure reported by libagentsbx: `code` is the negative return value and the message is
 * sbx_last_error() as read on the thread that made the failing call.
 */
class AgentSbxError extends Error {
  constructor(code, message, operation) {
    super(message || `${operation || 'libagentsbx'} failed with code ${code}`);
    this.name = 'AgentSbxError';
    this.code = code;
    this.codeName = codeName(code);
    if (operation) this.operation = operation;
  }
}

/** An error the binding raises itself, with the library's code for the same condition. */
function bindingError(name, message, operation) {
  return new AgentSbxError(-CODES[name], message, operation);
}

module.exports = { AgentSbxError, CODES, codeName, bindingError };
