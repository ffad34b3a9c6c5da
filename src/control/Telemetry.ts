// Optional OpenTelemetry export (issue 18): the spans the core already opens (CodexHarness.runTurn, ThreadSetup.forSession,
// AppServer.request, Delivery.deliver, ...) posted to a collector as OTLP/HTTP JSON at `<endpoint>/v1/traces`, with
// @effect/opentelemetry's own OtlpTracer over the global fetch: no OpenTelemetry SDK, no new dependency, no undici.
//
// Telemetry must never cost a turn anything, nor an exit more than a moment. Checked in OtlpTracer 0.64.1: an ended span
// is pushed into a buffer (synchronously); a fiber of the layer's scope posts the buffer every `exportInterval`; a post
// that fails (after three retries a second apart) is caught, logged at debug, and export is off for a minute (spans
// meanwhile dropped, silently). Closing the scope posts what is left, bounded by `shutdownTimeout`: a process exiting
// right after a turn flushes its spans, and a dead or slow collector holds the exit up by at most `shutdownBoundMs`
// (100 ms, well inside the 200 ms an exit may wait). Added here: a collector that takes a post and never answers would
// hold the export fiber as long as fetch waits (minutes), so each post has a timeout of its own; and since the exporter
// drops spans without a word, the layer counts the spans it ended and those a collector took, and its close says once
// (at info) how many never got there.
//
// The endpoint comes from the `--otlp URL` flag, else the OTel variables. A URL with credentials in it is refused (a
// flag is visible in the process list); a collector's auth goes in OTEL_EXPORTER_OTLP_HEADERS.
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { Effect, Either, Layer, Schema, Tracer } from "effect"

/** The telemetry configuration cannot be used; the message never carries a password or a header's value. */
export class TelemetryConfigError extends Schema.TaggedError<TelemetryConfigError>()("TelemetryConfigError", {
  source: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.source}: ${this.reason}`
  }
}

/** `endpoint` is the full traces URL, e.g. "http://127.0.0.1:4318/v1/traces" */
export interface TelemetryConfig { readonly endpoint: string; readonly headers: Readonly<Record<string, string>> }

/** the URL as it may be shown: the password (or a user name alone, often a token) replaced by *** */
export const redactUrl = (raw: string): string => {
  try {
    const url = new URL(raw)
    if (url.username === "" && url.password === "") return raw
    if (url.password !== "") url.password = "***"
    else url.username = "***"
    return url.href
  } catch {
    // not a URL: whatever sits between "//" and "@" may still be credentials
    return raw.replace(/\/\/[^/?#]*@/, "//***@")
  }
}

const tracesUrl = (raw: string, source: string, base: boolean): Either.Either<string, TelemetryConfigError> => {
  const refuse = (reason: string) => Either.left(new TelemetryConfigError({ source, reason: `${reason} (${redactUrl(raw)})` }))
  const url = URL.canParse(raw.trim()) ? new URL(raw.trim()) : undefined
  if (url === undefined) return refuse("not a URL")
  if (url.protocol !== "http:" && url.protocol !== "https:") return refuse("only http: and https: collectors are supported (OTLP over HTTP)")
  if (url.username !== "" || url.password !== "") {
    return refuse("credentials in the URL are refused, as a flag or URL is easily seen; put them in OTEL_EXPORTER_OTLP_HEADERS")
  }
  // a base gets the signal's path, as the OTel spec says; one that already ends in it is taken as meant
  if (base && !/\/v1\/traces\/?$/.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/traces`
  return Either.right(url.href)
}

/**
 * The traces URL to export to, or undefined when telemetry is off: the `--otlp` flag (a collector's base URL, to which
 * `/v1/traces` is added), else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL, as is), else OTEL_EXPORTER_OTLP_ENDPOINT
 * (a base). An Either, which an Effect.gen can also `yield*`.
 */
export const endpointFrom = (flag: string | undefined, env: NodeJS.ProcessEnv): Either.Either<string | undefined, TelemetryConfigError> => {
  const set = (value: string | undefined) => (value !== undefined && value.trim() !== "" ? value : undefined)
  const flagged = set(flag)
  if (flagged !== undefined) return tracesUrl(flagged, "--otlp", true)
  const traces = set(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  const base = set(env.OTEL_EXPORTER_OTLP_ENDPOINT)
  if (traces === undefined && base === undefined) return Either.right(undefined)
  // a gRPC endpoint (port 4317) would refuse every post, silently: said now
  const protocol = set(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) ?? set(env.OTEL_EXPORTER_OTLP_PROTOCOL)
  if (protocol?.trim() === "grpc") {
    return Either.left(new TelemetryConfigError({ source: "OTEL_EXPORTER_OTLP_PROTOCOL", reason: "grpc is not supported: codex-harness exports OTLP over HTTP" }))
  }
  return traces !== undefined
    ? tracesUrl(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", false)
    : tracesUrl(base!, "OTEL_EXPORTER_OTLP_ENDPOINT", true)
}

/**
 * The headers every export carries: OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS over it, each
 * "key1=value1,key2=value2" with percent-encoded values (the OTel spec's format).
 */
export const headersFrom = (env: NodeJS.ProcessEnv): Either.Either<Record<string, string>, TelemetryConfigError> => {
  const headers: Record<string, string> = {}
  for (const name of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] as const) {
    const entries = (env[name] ?? "").split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
    for (const [i, entry] of entries.entries()) {
      const at = entry.indexOf("=")
      const key = at > 0 ? entry.slice(0, at).trim() : ""
      // the entry is named by its position, never shown: it may be a secret
      const refuse = (why: string) => Either.left(new TelemetryConfigError({ source: name, reason: `entry ${i + 1} ${why}` }))
      if (key === "" || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) return refuse("is not key=value with a header name as key")
      try {
        headers[key.toLowerCase()] = decodeURIComponent(entry.slice(at + 1).trim())
      } catch {
        return refuse(`(${key}) has a malformed percent-encoding`)
      }
    }
  }
  return Either.right(headers)
}

/** the endpoint and headers, or undefined when no endpoint is configured */
export const configFrom = (flag: string | undefined, env: NodeJS.ProcessEnv): Either.Either<TelemetryConfig | undefined, TelemetryConfigError> =>
  Either.flatMap(endpointFrom(flag, env), (endpoint) =>
    endpoint === undefined ? Either.right(undefined) : Either.map(headersFrom(env), (headers) => ({ endpoint, headers })))

/** how long one post may wait for the collector's answer before it counts as failed */
const requestTimeout = "10 seconds"

/**
 * How long the close waits for the last post. An exit is to be held up at most 200 ms by a collector that is down or
 * slow; the rest of that is for aborting the post, the timer's own lateness and the process's exit on a busy machine.
 * The flush carries at most the last second's spans (the rest went with the periodic posts), which a collector on the
 * same machine or network takes well within it.
 */
export const shutdownBoundMs = 100

/**
 * What became of the spans: how many the tracer ended, and how many were in posts a collector answered with 2xx. A post's
 * body is matched to the number of spans in it by identity: the exporter sends (and retries) the body it serialized.
 */
interface Tally {
  ended: number
  delivered: number
  readonly spansIn: WeakMap<HttpBody.HttpBody, number>
}

/** the spans in one OTLP traces payload, as OtlpTracer builds it */
const spanCount = (data: unknown): number => {
  const resourceSpans = (data as { readonly resourceSpans?: ReadonlyArray<{ readonly scopeSpans?: ReadonlyArray<{ readonly spans?: ReadonlyArray<unknown> }> }> })
    .resourceSpans ?? []
  return resourceSpans.reduce((n, r) => n + (r.scopeSpans ?? []).reduce((m, s) => m + (s.spans?.length ?? 0), 0), 0)
}

/** OTLP JSON (OtlpSerialization.layerJson's), remembering how many spans each traces body holds */
const countingSerialization = (tally: Tally) =>
  Layer.effect(
    OtlpSerialization.OtlpSerialization,
    Effect.map(OtlpSerialization.OtlpSerialization, (json) => ({
      ...json,
      traces: (data: unknown) => {
        const body = json.traces(data)
        tally.spansIn.set(body, spanCount(data))
        return body
      }
    }))
  ).pipe(Layer.provide(OtlpSerialization.layerJson))

/**
 * The global fetch, each request bounded (a timeout is a transport error, which OtlpTracer retries, then gives up), and
 * the spans of each post the collector took counted as delivered.
 */
const httpClient = (tally: Tally) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.transform(client, (response, request) =>
        Effect.timeoutFail(response, {
          duration: requestTimeout,
          onTimeout: () => new HttpClientError.RequestError({ request, reason: "Transport", description: `no answer within ${requestTimeout}` })
        }).pipe(Effect.tap((answer) =>
          Effect.sync(() => {
            if (answer.status >= 200 && answer.status < 300) tally.delivered += tally.spansIn.get(request.body) ?? 0
          })
        ))))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** `inner`, with every span it ends counted */
const counting = (inner: Tracer.Tracer, tally: Tally): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = inner.span(name, parent, context, links, startTime, kind, options)
      const end = span.end
      span.end = (endTime, exit) => {
        tally.ended++
        end.call(span, endTime, exit)
      }
      return span
    },
    context: (f, fiber) => inner.context(f, fiber)
  })

/**
 * The OTLP tracer: every span of the program it is provided to, exported to `endpoint` (the full traces URL) every
 * second. Closing its scope flushes what is left, waiting at most `shutdownBoundMs`, then logs at info, once, how many spans
 * never reached the collector (refused, failed, or not answered in time). Provide it outermost, so the harness's own
 * fibers (built inside it) see the tracer and their spans end before the flush.
 */
export const layer = (options: {
  readonly endpoint: string
  readonly serviceName?: string
  /** the CLI passes its package version (src/cli/version.ts, above this room) */
  readonly serviceVersion?: string | undefined
  readonly headers?: Readonly<Record<string, string>>
}): Layer.Layer<never> =>
  Layer.unwrapScoped(Effect.gen(function* () {
    const tally: Tally = { ended: 0, delivered: 0, spansIn: new WeakMap() }
    // added before the exporter's own, so it runs after the exporter's last flush has ended or been given up
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        const dropped = tally.ended - tally.delivered
        if (dropped <= 0) return Effect.void
        return Effect.logInfo(
          `telemetry: ${dropped} of ${tally.ended} span${tally.ended === 1 ? "" : "s"} dropped: the collector at ` +
            `${redactUrl(options.endpoint)} did not take them (refused, failed, or no answer within ${shutdownBoundMs} ms of the exit)`
        )
      }))
    const exporting = yield* Layer.build(Layer.merge(httpClient(tally), countingSerialization(tally)))
    const tracer = yield* OtlpTracer.make({
      url: options.endpoint,
      resource: { serviceName: options.serviceName ?? "codex-harness", serviceVersion: options.serviceVersion },
      headers: options.headers ?? {},
      exportInterval: "1 second",
      shutdownTimeout: `${shutdownBoundMs} millis`
    }).pipe(Effect.provide(exporting))
    return Layer.setTracer(counting(tracer, tally))
  }))

/** The tracer configured by the `--otlp` flag or the OTel variables; no layer at all when neither names an endpoint. */
export const layerFromEnv = (
  flag?: string,
  options: { readonly env?: NodeJS.ProcessEnv; readonly serviceVersion?: string } = {}
): Layer.Layer<never, TelemetryConfigError> =>
  Layer.unwrapEffect(
    Effect.map(configFrom(flag, options.env ?? process.env), (config) =>
      config === undefined ? Layer.empty : layer({ ...config, serviceVersion: options.serviceVersion }))
  )
