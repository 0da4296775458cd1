package dynamometa

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/queueshq/queues/pkg/ids"
	"github.com/queueshq/queues/pkg/meta"
)

type projectItem struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	ID        string    `dynamodbav:"id"`
	Name      string    `dynamodbav:"name"`
	CreatedAt time.Time `dynamodbav:"createdAt"`
}

func (it projectItem) project() (meta.Project, error) {
	id, err := ids.ParseUUID(it.ID)
	if err != nil {
		return meta.Project{}, corrupt("project %s/%s: %v", it.PK, it.SK, err)
	}
	return meta.Project{ID: id, Name: it.Name, CreatedAt: utc(it.CreatedAt)}, nil
}

// CreateProject stores a new project. A project id already stored is an Internal error (ids
// are random; a collision is a bug).
func (s *Store) CreateProject(ctx context.Context, p meta.Project) error {
	if p.ID.IsZero() {
		return meta.ZeroID("project")
	}
	it := projectItem{PK: projectPK(p.ID), SK: projectSK, ID: p.ID.String(), Name: p.Name, CreatedAt: utc(p.CreatedAt)}
	main, err := marshal(it)
	if err != nil {
		return err
	}
	it.PK, it.SK = projectsPK, p.ID.String()
	listed, err := marshal(it)
	if err != nil {
		return err
	}
	notExists := aws.String("attribute_not_exists(pk)")
	err = s.transact(ctx, "create project", []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(s.table), Item: main, ConditionExpression: notExists}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: listed, ConditionExpression: notExists}},
	})
	var c *canceled
	if errors.As(err, &c) {
		return meta.IDTaken(meta.KindProject, p.ID)
	}
	return err
}

// GetProject reads a project.
func (s *Store) GetProject(ctx context.Context, id ids.ID) (meta.Project, error) {
	var it projectItem
	ok, err := s.get(ctx, "get project", projectPK(id), projectSK, &it)
	if err != nil {
		return meta.Project{}, err
	}
	if !ok {
		return meta.Project{}, meta.NotFound(meta.KindProject, id)
	}
	return it.project()
}

// ListProjects lists projects in id (creation) order.
func (s *Store) ListProjects(ctx context.Context, page meta.Page) ([]meta.Project, string, error) {
	return listByID(ctx, s, "project", projectsPK, page, projectItem.project)
}

func (s *Store) projectExists(id ids.ID) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: aws.String(s.table), Key: key(projectPK(id), projectSK),
		ConditionExpression: aws.String("attribute_exists(pk)"),
	}}
}
