package mockserver

import "github.com/acme/app/mock"

type addFunc func(key, about string, h mock.Handler)

type templateStore struct{}

func newTemplateStore() *templateStore { return &templateStore{} }

func (b *backend) addAI(add addFunc)        {}
func (b *backend) addUsage(add addFunc)     {}
func (b *backend) addStorage(add addFunc)   {}
func (b *backend) addTemplates(add addFunc) {}
