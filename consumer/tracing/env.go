package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/eventpipe/eventpipe/consumer/logging"
)

// Shutdown flushes the spans not yet exported and stops the exporter.
type Shutdown func(ctx context.Context) error

// Identity names the process in its spans' resource (service.name and
// service.version, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// say otherwise).
type Identity struct {
	Service, Version string
}

// FromEnv builds the tracer the standard OpenTelemetry variables ask for,
// or returns nil (tracing off: no SDK, no exporter) when they ask for none.
// Tracing is on when OTEL_TRACES_EXPORTER is otlp, or when it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
// OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn it off.
//
// Spans are exported over OTLP, with the protocol of
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL (grpc,
// or http/protobuf, the default). The exporter reads the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, certificates), the SDK
// OTEL_TRACES_SAMPLER (default parentbased_always_on) and OTEL_BSP_*, the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. A value none of
// them accepts is an error naming the variable.
func FromEnv(ctx context.Context, id Identity) (*Tracer, Shutdown, error) {
	get := func(k string) string { return strings.TrimSpace(os.Getenv(k)) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return nil, nil, nil
	}
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return nil, nil, nil
	case "":
		if get("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil, nil
		}
	case "otlp":
	default:
		return nil, nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: the consumer exports traces over OTLP only (fix: use otlp, or none to turn tracing off)", exp)
	}
	protocol, setting := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if protocol == "" {
		protocol, setting = get("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch protocol {
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	default:
		return nil, nil, fmt.Errorf("%s=%q: unsupported OTLP protocol (fix: use grpc or http/protobuf)", setting, protocol)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Later options win: the variables override the consumer's identity.
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(id.Service), semconv.ServiceVersion(id.Version)),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res), sdktrace.WithSpanLimits(spanLimits()))
	return New(provider), provider.Shutdown, nil
}

// spanLimits are the SDK's span limits from the OTEL_SPAN_* variables, with
// attribute values bounded like log fields (logging.MaxFieldLen) unless
// OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT asks for less: the attributes of
// spans the consumer does not start itself (the lease actions' HTTP client
// spans) are bounded too.
func spanLimits() sdktrace.SpanLimits {
	l := sdktrace.NewSpanLimits()
	if l.AttributeValueLengthLimit < 0 || l.AttributeValueLengthLimit > logging.MaxFieldLen {
		l.AttributeValueLengthLimit = logging.MaxFieldLen
	}
	return l
}
