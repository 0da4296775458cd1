package api

import (
	"github.com/queueshq/queues/pkg/apierr"
	"github.com/queueshq/queues/pkg/service"
)

// The answers to the engines' and the metadata stores' refusals are the service layer's
// (pkg/service/refusals.go), so both doors give the same ones; these are their /v1 names.

// refusal is the answer to an engine's or a metadata store's refusal, nil when err is not one.
func refusal(err error) *apierr.Error { return service.Refusal(err) }

// engineRefusal answers an engine's refusal.
func engineRefusal(err error) *apierr.Error { return service.EngineRefusal(err) }

// asAPI is apierr.As with the refusals answered.
func asAPI(err error) *apierr.Error { return service.AsAPI(err) }
