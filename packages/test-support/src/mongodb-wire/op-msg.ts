import { BSON, type Document } from 'bson';

/** The wire protocol's opcodes this primary reads and writes. */
export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_COMPRESSED = 2012;
export const OP_MSG = 2013;

/** OP_MSG flag bits. */
const CHECKSUM_PRESENT = 1;
export const MORE_TO_COME = 1 << 1;
export const EXHAUST_ALLOWED = 1 << 16;

const HEADER_BYTES = 16;

/** One request read off a connection: its header, and the command it carries (document sequences merged in). */
export interface WireRequest {
  requestId: number;
  opCode: number;
  flags: number;
  /** The command body; for OP_QUERY, the query document. */
  body: Document;
  /** The size of the body document in bytes, as the server checks it against its limits. */
  bodyBytes: number;
}

/** Splits a byte stream into whole messages; each starts with its int32 length. */
export class MessageReader {
  private buffered: Buffer = Buffer.alloc(0);

  constructor(private readonly maxMessageBytes: number) {}

  /** Adds bytes; returns the whole messages now complete, or `'too large'` when a message declares too many bytes. */
  push(chunk: Buffer): Buffer[] | 'too large' {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const messages: Buffer[] = [];
    while (this.buffered.length >= 4) {
      const length = this.buffered.readInt32LE(0);
      if (length < HEADER_BYTES || length > this.maxMessageBytes) return 'too large';
      if (this.buffered.length < length) break;
      messages.push(this.buffered.subarray(0, length));
      this.buffered = this.buffered.subarray(length);
    }
    return messages;
  }
}

function cstringEnd(buffer: Buffer, start: number): number {
  const end = buffer.indexOf(0, start);
  if (end === -1) throw new Error('unterminated cstring');
  return end;
}

/** Parses an OP_MSG or OP_QUERY message into its command; other opcodes throw. */
export function parseRequest(message: Buffer): WireRequest {
  const requestId = message.readInt32LE(4);
  const opCode = message.readInt32LE(12);
  if (opCode === OP_QUERY) {
    const nameEnd = cstringEnd(message, HEADER_BYTES + 4);
    const at = nameEnd + 1 + 8;
    const bodyBytes = message.readInt32LE(at);
    const body = BSON.deserialize(message.subarray(at, at + bodyBytes));
    return { requestId, opCode, flags: 0, body, bodyBytes };
  }
  if (opCode !== OP_MSG) throw new Error(`unsupported opcode ${opCode}`);
  const flags = message.readUInt32LE(HEADER_BYTES);
  const end = message.length - (flags & CHECKSUM_PRESENT ? 4 : 0);
  let at = HEADER_BYTES + 4;
  let body: Document | undefined;
  let bodyBytes = 0;
  const sequences: [string, Document[]][] = [];
  while (at < end) {
    const kind = message.readUInt8(at);
    at += 1;
    const size = message.readInt32LE(at);
    if (kind === 0) {
      body = BSON.deserialize(message.subarray(at, at + size));
      bodyBytes = size;
      at += size;
      continue;
    }
    const sectionEnd = at + size;
    const nameEnd = cstringEnd(message, at + 4);
    const name = message.toString('utf8', at + 4, nameEnd);
    const documents: Document[] = [];
    for (let doc = nameEnd + 1; doc < sectionEnd; ) {
      const docSize = message.readInt32LE(doc);
      documents.push(BSON.deserialize(message.subarray(doc, doc + docSize)));
      doc += docSize;
    }
    sequences.push([name, documents]);
    at = sectionEnd;
  }
  if (!body) throw new Error('OP_MSG without a body section');
  for (const [name, documents] of sequences) body[name] = documents;
  return { requestId, opCode, flags, body, bodyBytes };
}

function header(length: number, requestId: number, responseTo: number, opCode: number): Buffer {
  const head = Buffer.alloc(HEADER_BYTES);
  head.writeInt32LE(length, 0);
  head.writeInt32LE(requestId, 4);
  head.writeInt32LE(responseTo, 8);
  head.writeInt32LE(opCode, 12);
  return head;
}

/** An OP_MSG reply with one body section. */
export function encodeMsg(reply: Document, requestId: number, responseTo: number, flags = 0): Buffer {
  const body = BSON.serialize(reply);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32LE(flags, 0);
  prefix.writeUInt8(0, 4);
  const length = HEADER_BYTES + prefix.length + body.length;
  return Buffer.concat([header(length, requestId, responseTo, OP_MSG), prefix, body]);
}

/** An OP_REPLY with one document, the answer to an OP_QUERY command (the driver's first handshake). */
export function encodeReply(reply: Document, requestId: number, responseTo: number): Buffer {
  const body = BSON.serialize(reply);
  const fields = Buffer.alloc(20);
  fields.writeInt32LE(0, 0); // responseFlags
  fields.writeBigInt64LE(0n, 4); // cursorID
  fields.writeInt32LE(0, 12); // startingFrom
  fields.writeInt32LE(1, 16); // numberReturned
  const length = HEADER_BYTES + fields.length + body.length;
  return Buffer.concat([header(length, requestId, responseTo, OP_REPLY), fields, body]);
}
