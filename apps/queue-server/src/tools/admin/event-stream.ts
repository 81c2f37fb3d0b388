/** One message of a `text/event-stream` body: its `event` type (`message` when it names none) and `data`. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * The messages of a server-sent events body as the EventSource standard reads
 * them: `field: value` lines, a blank line ending each message, `data` lines
 * joined with newlines, comments (`:` lines) and other fields ignored.
 */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  let pending = '';
  let event = '';
  let data: string[] = [];
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      pending += decoder.decode(value, { stream: true });
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
