{{/* Chart name, overridable. */}}
{{- define "agentplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped base name for every object. */}}
{{- define "agentplane.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "agentplane.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "agentplane.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "agentplane.operator" -}}{{ include "agentplane.fullname" . | trunc 54 | trimSuffix "-" }}-operator{{- end -}}
{{- define "agentplane.controlPlane" -}}{{ include "agentplane.fullname" . | trunc 49 | trimSuffix "-" }}-control-plane{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "operator"). */}}
{{- define "agentplane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agentplane.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "agentplane.labels" -}}
{{ include "agentplane.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: agentplane
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The platform image (control plane and operator entry points). */}}
{{- define "agentplane.platformImage" -}}
{{- $repository := ternary "agentplane/platform" (printf "%s/platform" (trimSuffix "/" .Values.image.registry)) (empty .Values.image.registry) -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Namespaces the control plane may create deployments in (release namespace when none are listed). */}}
{{- define "agentplane.deploymentNamespaces" -}}
{{- $namespaces := .Values.controlPlane.namespaces | default (list .Release.Namespace) -}}
{{- join "," $namespaces -}}
{{- end -}}

{{- define "agentplane.providersNamespace" -}}
{{- $first := first (.Values.controlPlane.namespaces | default (list .Release.Namespace)) -}}
{{- default $first .Values.controlPlane.providersNamespace -}}
{{- end -}}

{{- define "agentplane.apiKeysSecret" -}}
{{- default (printf "%s-api-keys" (include "agentplane.controlPlane" .)) .Values.controlPlane.apiKeys.existingSecret -}}
{{- end -}}

{{- define "agentplane.hasApiKeys" -}}
{{- if or .Values.controlPlane.apiKeys.existingSecret .Values.controlPlane.apiKeys.grants -}}true{{- end -}}
{{- end -}}

{{/* Pod-level settings both Deployments share. */}}
{{- define "agentplane.podCommon" -}}
{{- with .root.Values.image.pullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
