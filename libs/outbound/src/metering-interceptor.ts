import type { Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { OutboundError } from './errors.js';

/** What a response is counted with, chosen from its headers; `refused` when they alone break a bound. */
export interface ResponseMeter {
  take(chunk: Uint8Array): OutboundError | undefined;
  refused?: OutboundError;
}

/** Builds the meter of one response from the request's options and the response's headers. */
export type MeterFactory = (opts: Dispatcher.DispatchOptions, headers: IncomingHttpHeaders) => ResponseMeter;

/**
 * Counts a response's bytes in the dispatcher, before undici's request API turns them into a
 * body stream: no stream hop on the call path, and no chunk escapes the count (the body's
 * buffer fills before the caller gets the stream). A bound passed aborts the request with the
 * bound's error, so the body stream errors with it and the connection is dropped.
 */
class MeteringHandler implements Dispatcher.DispatchHandler {
  private meter: ResponseMeter | undefined;

  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly opts: Dispatcher.DispatchOptions,
    private readonly meterFor: MeterFactory,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    socket: Duplex,
  ): void {
    this.inner.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    this.inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
    // 1xx answers are followed by the real one.
    if (statusCode < 200) return;
    this.meter = this.meterFor(this.opts, headers);
    // Handed the headers first: the caller gets its response, whose body then fails unread.
    if (this.meter.refused !== undefined && !controller.aborted) controller.abort(this.meter.refused);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const err = this.meter?.take(chunk);
    if (err !== undefined) {
      if (!controller.aborted) controller.abort(err);
      return;
    }
    this.inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.inner.onResponseError?.(controller, error);
  }
}

/** An undici interceptor (`agent.compose(...)`) that meters every response with `meterFor`. */
export function meteringInterceptor(meterFor: MeterFactory): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new MeteringHandler(handler, opts, meterFor));
}
